import Foundation
import NotesModel
import SQLiteKit

// The low-level edits every file operation is made of. Each runs inside the
// caller's transaction and records what it changed in `commit`.
extension NotesStore {
    /// Queues (or coalesces into the entity's pending row) a change for the outbox.
    func enqueue(_ db: Connection, _ ref: EntityRef, _ operation: ChangeOperation, commit: inout StoreCommit) throws {
        commit.outboxChanged = true
        // The same change already queued: the upsert below would change
        // nothing. Skipping it (and the new change id) matters to the kernel's
        // writes into a large note, thousands in a row.
        let queued = try db.queryOne(
            "SELECT op FROM outbox WHERE entity_kind = ? AND entity_id = ? AND state = 'pending'", ref.kind, ref.idText
        ) { ChangeOperation(rawValue: $0.string(0)) } ?? nil
        try enqueue(db, ref, operation, queued: queued, commit: &commit)
    }

    /// `enqueue` when the caller read the entity's pending operation
    /// (`queued`, nil for none) earlier in this transaction.
    func enqueue(
        _ db: Connection, _ ref: EntityRef, _ operation: ChangeOperation, queued: ChangeOperation?,
        commit: inout StoreCommit
    ) throws {
        commit.outboxChanged = true
        guard queued != operation else { return }
        try db.run(
            """
            INSERT INTO outbox(change_id, entity_kind, entity_id, op, state, created_ns)
            VALUES (?, ?, ?, ?, 'pending', ?)
            ON CONFLICT(entity_kind, entity_id) WHERE state = 'pending' DO UPDATE SET op = excluded.op
            """, ChangeID(newUUID()), ref.kind, ref.idText, operation, now)
    }

    /// Drops the pending (never frozen) outbox row of an entity.
    func dropPending(_ db: Connection, _ ref: EntityRef) throws {
        try db.run(
            "DELETE FROM outbox WHERE entity_kind = ? AND entity_id = ? AND state = 'pending'", ref.kind, ref.idText)
    }

    /// True when some change of this entity was frozen (sent, maybe received):
    /// then a delete must travel as a tombstone.
    func everFrozen(_ db: Connection, _ ref: EntityRef, serverVersion: Int64?) throws -> Bool {
        if serverVersion != nil { return true }
        return try db.queryOne(
            "SELECT 1 FROM outbox WHERE entity_kind = ? AND entity_id = ? AND state = 'in_flight'",
            ref.kind, ref.idText) { _ in true } ?? false
    }

    /// Inserts a new live note and queues its creation. Returns the new
    /// entry as a listing would show it. `shownIn` is the directory of
    /// `content.folderID` when the caller has just checked that it is live,
    /// and `freeName` a name it found free there (neither is asked again).
    @discardableResult
    func insertNote(
        _ db: Connection, id: NoteID, content: NoteContent, modified: Int64? = nil, mode: UInt32 = 0o644,
        conflictOf: NoteID? = nil, shownIn: DirectoryRef? = nil, freeName: String? = nil, commit: inout StoreCommit
    ) throws -> Entry {
        let time = now
        try db.run(
            """
            INSERT INTO notes(id, folder_id, title, body, body_size, created_ns, updated_ns, mode, conflict_of)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, id.description, content.folderID?.description, content.title, content.body,
            Int64(content.body.count), time, modified ?? time, Int64(mode), conflictOf?.description)
        try enqueue(db, .note(id), .put, commit: &commit)
        let directory = try shownIn ?? displayDirectory(db, folderID: content.folderID)
        commit.changedEntries.insert(.note(id))
        // Its ctime is the moment it was made: no entry_times row unless its
        // mtime was set to another time.
        if modified == nil { commit.madeAtTheirMtime.append(.note(id)) }
        let placed = try placeName(
            db, entry: .note(id), in: directory, source: content.title, isNew: true,
            freeName: shownIn == nil ? nil : freeName, commit: &commit)
        return Entry(
            ref: .note(id), name: placed.name, parent: directory, kind: .file, size: Int64(content.body.count),
            modifiedNanoseconds: modified ?? time, mode: mode & 0o7777, cookie: placed.cookie)
    }

    /// Changes a live note's content as a local edit; no-op when nothing differs.
    /// Keeps the replaced body in the history when the edit truncates or halves it.
    func editNote(
        _ db: Connection, _ row: NoteRow, to content: NoteContent, modified: Int64? = nil,
        commit: inout StoreCommit
    ) throws {
        guard content.body.count <= configuration.noteSizeLimitBytes else {
            throw StoreError.tooLarge(limit: configuration.noteSizeLimitBytes)
        }
        if let modified, modified != row.updatedNanoseconds {
            // An mtime carried over (a rename-over takes its source's): the
            // ctime is recorded first, so it moves to now and never back.
            try recordStatusChange(
                db, .note(row.id), at: now, modified: modified, knownModified: row.updatedNanoseconds)
        }
        let time = modified ?? now
        guard content != row.content else {
            if let modified, modified != row.updatedNanoseconds {
                try db.run("UPDATE notes SET updated_ns = ? WHERE seq = ?", modified, row.seq)
                commit.changedEntries.insert(.note(row.id))
            }
            return
        }
        try keepHistoryIfShrinking(db, row, newSize: content.body.count)
        // folder_id is only in the SET list when it changes: SQLite rewrites the
        // notes_folder index for any listed column, one WAL page per file write.
        let movesFolder = content.folderID != row.folderID
        try db.run(
            """
            UPDATE notes SET title = ?, body = ?, body_size = ?, \(movesFolder ? "folder_id = ?, " : "")updated_ns = ?,
                local_rev = local_rev + 1, \(Self.releaseOversizeHoldSQL)
            WHERE seq = ?
            """,
            arguments: [content.title, content.body, Int64(content.body.count)]
                + (movesFolder ? [content.folderID?.description] : []) + [time, Int64(content.body.count), row.seq])
        try enqueue(db, .note(row.id), .put, commit: &commit)
        commit.changedEntries.insert(.note(row.id))
        if row.serverVersion != nil { commit.touchedSyncedNote = true }
        if content.title != row.title || content.folderID != row.folderID {
            let directory = try displayDirectory(db, folderID: content.folderID)
            try placeName(db, entry: .note(row.id), in: directory, source: content.title, commit: &commit)
        }
    }

    /// Deletes a note locally (see `tombstoneOrDrop`); with `intoTrash`, it
    /// goes to the trash with its last text. A note whose text lives on
    /// elsewhere (the source of a rename-over, a conflict copy merged into
    /// its note) is deleted without.
    func deleteNote(_ db: Connection, _ row: NoteRow, intoTrash: Bool, commit: inout StoreCommit) throws {
        if intoTrash && !row.deleted { try addToTrash(db, row, origin: .deletedHere) }
        try tombstoneOrDrop(db, .note(row.id), seq: row.seq, serverVersion: row.serverVersion, commit: &commit)
    }

    /// Deletes a note or folder locally: a tombstone when any change of it was
    /// frozen. Otherwise the server never heard of it: a folder's row goes (a
    /// folder made again at its path gets the same name-based id anyway), and
    /// a note's stays as a local tombstone that is never sent, so a save that
    /// first deletes or moves the file away (vim, git, `cp
    /// --remove-destination`, `tar x`) revives the same note. Local tombstones
    /// go when the next mount session begins.
    func tombstoneOrDrop(
        _ db: Connection, _ entry: EntryRef, seq: Int64, serverVersion: Int64?, commit: inout StoreCommit
    ) throws {
        let (ref, table): (EntityRef, String)
        switch entry {
        case .note(let id): (ref, table) = (.note(id), "notes")
        case .folder(let id): (ref, table) = (.folder(id), "folders")
        case .local, .root: return
        }
        let kind = ref.kind
        try removeName(db, entry: entry, commit: &commit)
        commit.changedEntries.insert(entry)
        if try everFrozen(db, ref, serverVersion: serverVersion) {
            try db.run(
                "UPDATE \(table) SET deleted = 1, updated_ns = ?, local_rev = local_rev + 1\(kind == .note ? ", over_cap_size = 0" : "") WHERE seq = ?",
                now, seq)
            try enqueue(db, ref, .delete, commit: &commit)
        } else {
            try dropPending(db, ref)
            if kind == .note {
                // Clean: nothing about it is ever sent unless it is revived.
                try db.run(
                    """
                    UPDATE notes SET deleted = 1, updated_ns = ?, local_rev = local_rev + 1, synced_rev = local_rev + 1,
                        over_cap_size = 0
                    WHERE seq = ?
                    """, now, seq)
            } else {
                try db.run("DELETE FROM \(table) WHERE seq = ?", seq)
            }
        }
    }

    /// Records a tombstoned note's path so creating a file there revives it.
    func rememberRevivable(_ db: Connection, directory: DirectoryRef, name: String, id: NoteID) throws {
        try db.run(
            """
            INSERT OR REPLACE INTO revivable(parent_key, name, note_id, session)
            VALUES (?, ?, ?, (SELECT session FROM sync_state WHERE id = 1))
            """, directory.key, name, id.description)
    }

    /// The tombstoned note that may be revived at this path, if any.
    func revivableNote(_ db: Connection, directory: DirectoryRef, name: String) throws -> NoteRow? {
        let found = try db.queryOne(
            "SELECT note_id FROM revivable WHERE parent_key = ? AND name = ?", directory.key, name
        ) { NoteID($0.string(0)) }
        guard let id = found ?? nil else { return nil }
        guard let row = try NoteRow.load(db, id: id), row.deleted else { return nil }
        return row
    }

    /// Brings a tombstoned note back at a path, with new content, as an edit.
    func reviveNote(
        _ db: Connection, _ row: NoteRow, content: NoteContent, modified: Int64? = nil, commit: inout StoreCommit
    ) throws {
        try db.run(
            """
            UPDATE notes SET deleted = 0, title = ?, body = ?, body_size = ?, folder_id = ?, updated_ns = ?,
                local_rev = local_rev + 1 WHERE seq = ?
            """, content.title, content.body, Int64(content.body.count), content.folderID?.description,
            modified ?? now, row.seq)
        try db.run("DELETE FROM revivable WHERE note_id = ?", row.id.description)
        // A revived note gets a fresh inode; the old one may still be cached as deleted.
        try db.run("DELETE FROM inodes WHERE entry_kind = 'note' AND entry_id = ?", row.id.description)
        try enqueue(db, .note(row.id), .put, commit: &commit)
        commit.changedEntries.insert(.note(row.id))
        let directory = try displayDirectory(db, folderID: content.folderID)
        try placeName(db, entry: .note(row.id), in: directory, source: content.title, commit: &commit)
    }

    func keepHistoryIfShrinking(_ db: Connection, _ row: NoteRow, newSize: Int) throws {
        let oldSize = row.body.count
        guard oldSize > 0, newSize == 0 || newSize * 2 < oldSize else { return }
        let reason: HistoryReason = newSize == 0 ? .truncated : .shrunk
        try addHistory(db, noteID: row.id, title: row.title, body: row.body, reason: reason)
    }

    /// Inserts a local-only entry and names it. Returns its row's `seq` and
    /// the new entry as a listing would show it. `nameIsFree`: the caller
    /// found `name` free in `directory` in this transaction (not asked again).
    @discardableResult
    func insertLocal(
        _ db: Connection, kind: EntryKind, in directory: DirectoryRef, name: String, data: Data = Data(),
        mode: UInt32, modified: Int64? = nil, origin: String? = nil, nameIsFree: Bool = false,
        commit: inout StoreCommit
    ) throws -> (seq: Int64, entry: Entry) {
        let time = now
        if kind == .file {
            try insertLocalFileRow(
                db, data: data, mode: mode, created: time, modified: modified ?? time, origin: origin)
        } else {
            try db.run(
                """
                INSERT INTO local_entries(type, data, mode, created_ns, updated_ns, origin, size)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, kind.rawValue, data, Int64(mode), time, modified ?? time, origin, Int64(data.count))
        }
        let seq = db.lastInsertRowID
        // SQLite hands out an unlinked entry's row id again; its inode row may
        // still be there (kept so a rename-over can carry the number), and a
        // descriptor may still hold that number. A new entry gets a new one.
        try db.run("DELETE FROM inodes WHERE entry_kind = ? AND entry_id = ?",
                   EntryRef.local(seq).kindCode, EntryRef.local(seq).idText)
        commit.changedEntries.insert(.local(seq))
        if modified == nil { commit.madeAtTheirMtime.append(.local(seq)) }
        // A new row has no name yet (a stale one would fail the unique index).
        let placed = try placeName(
            db, entry: .local(seq), in: directory, source: name, isNew: true, freeName: nameIsFree ? name : nil,
            isDirectory: kind == .directory, commit: &commit)
        let entry = Entry(
            ref: .local(seq), name: placed.name, parent: directory, kind: kind, size: Int64(data.count),
            modifiedNanoseconds: modified ?? time, mode: mode & 0o7777, cookie: placed.cookie)
        return (seq, entry)
    }

    /// Deletes a local-only entry (and, for a directory, everything in it).
    func deleteLocal(_ db: Connection, seq: Int64, commit: inout StoreCommit) throws {
        let children = try db.query(
            "SELECT CAST(entry_id AS INTEGER) FROM names WHERE parent_key = ? AND entry_kind = 'local'",
            DirectoryRef.local(seq).key
        ) { $0.int64(0) }
        for child in children { try deleteLocal(db, seq: child, commit: &commit) }
        try removeName(db, entry: .local(seq), commit: &commit)
        try forgetLocalFile(db, seq: seq)
        try db.run("DELETE FROM local_entries WHERE seq = ?", seq)
        commit.changedEntries.insert(.local(seq))
    }

    /// Deletes a local-only file (not a directory: nothing is in it) whose
    /// row and name the caller has read in this transaction.
    func deleteLocalFile(_ db: Connection, _ row: LocalRow, named name: NameRow, commit: inout StoreCommit) throws {
        precondition(row.kind != .directory && name.entry == .local(row.seq), "deleteLocalFile of \(row.seq)")
        try removeName(db, name, isDirectory: false, commit: &commit)
        if let file = row.file { localFiles.removeAfterCommit(file) }
        try db.run("DELETE FROM local_entries WHERE seq = ?", row.seq)
        commit.changedEntries.insert(.local(row.seq))
    }

    /// Moves inode `from`'s number to entry `to` (rename-over: the kernel keeps
    /// the source's inode at the target path). Returns the number `to` had
    /// and the number it has now (nil when `from` had none).
    @discardableResult
    func repointInode(_ db: Connection, from: EntryRef, to: EntryRef) throws
        -> (replaced: UInt64?, current: UInt64?)
    {
        // RETURNING: each statement's change is made by its first step.
        let replaced = try db.queryOne(
            "DELETE FROM inodes WHERE entry_kind = ? AND entry_id = ? RETURNING ino", to.kindCode, to.idText
        ) { UInt64($0.int64(0)) }
        let current = try db.queryOne(
            "UPDATE inodes SET entry_kind = ?, entry_id = ? WHERE entry_kind = ? AND entry_id = ? RETURNING ino",
            to.kindCode, to.idText, from.kindCode, from.idText
        ) { UInt64($0.int64(0)) }
        return (replaced, current)
    }

    /// The folder a directory stands for when notes are placed in it (nil = root).
    func folderID(of directory: DirectoryRef) -> FolderID? {
        if case .folder(let id) = directory { return id }
        return nil
    }
}
