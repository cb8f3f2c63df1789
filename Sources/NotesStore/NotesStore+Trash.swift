import Foundation
import NotesModel
import SQLiteKit

// The trash: notes deleted here, or deleted elsewhere and pulled here, kept
// with their last text as long as the server keeps its history (see
// NotesStore+TrashPeriod.swift and `TrashTable`),
// shown under .notesfs/trash/ and brought back as the same note.
extension NotesStore {
    /// Puts a note that is being deleted into the trash, under the path it is
    /// shown at now; call it before the note's name is taken away. A note
    /// deleted again replaces its older entry.
    func addToTrash(_ db: Connection, _ row: NoteRow, origin: TrashOrigin) throws {
        let shown = try path(db, of: .note(row.id)).map { String($0.drop { $0 == "/" }) }
        try db.run(
            "INSERT OR REPLACE INTO trash(note_id, path, deleted_ns, origin) VALUES (?, ?, ?, ?)",
            row.id.description, shown ?? NameCodec.displayName(forTitle: row.title, inRoot: true), now,
            origin.stored)
        if try trashNeedsPruning(db) { historyPruner.schedule() }
    }

    /// Puts a note this machine never had, deleted elsewhere, into the trash
    /// with its last text from the server's history: a tombstone row on the
    /// server's deletion version (so a restore is a put on it, which revives
    /// the note everywhere) and a trash entry at the time it was deleted.
    /// False when the note is known here by now, or its deletion is older
    /// than the trash keeps.
    @discardableResult
    func trashFromServerHistory(
        _ id: NoteID, lastContent content: NoteContent, deletionVersion: Int64, deletedAtNanoseconds: Int64
    ) throws(StoreError) -> Bool {
        guard deletedAtNanoseconds >= now - trashRetentionNanoseconds else { return false }
        return try write(origin: .remote) { db, _ in
            guard try NoteRow.load(db, id: id) == nil else { return false }
            try db.run(
                """
                INSERT INTO notes(id, folder_id, title, body, body_size, created_ns, updated_ns, deleted,
                    server_version, base_exists, local_rev, synced_rev)
                VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, 0, 1, 1)
                """, id.description, content.folderID?.description, content.title, content.body,
                Int64(content.body.count), deletedAtNanoseconds, deletedAtNanoseconds, deletionVersion)
            let directory = try displayDirectory(db, folderID: content.folderID)
            let folderPath = try path(db, of: directory.entry).map { String($0.drop { $0 == "/" }) } ?? ""
            let name = NameCodec.displayName(forTitle: content.title, inRoot: folderPath.isEmpty)
            try db.run(
                "INSERT OR REPLACE INTO trash(note_id, path, deleted_ns, origin) VALUES (?, ?, ?, ?)",
                id.description, folderPath.isEmpty ? name : folderPath + "/" + name, deletedAtNanoseconds,
                TrashOrigin.deletedElsewhere.stored)
            return true
        }
    }

    /// True when the trash holds an entry past its age: one read of its
    /// first row (entries are added in the order they are deleted).
    func trashNeedsPruning(_ db: Connection) throws -> Bool {
        let oldest = try db.queryOne("SELECT deleted_ns FROM trash ORDER BY seq LIMIT 1") { $0.int64(0) }
        return oldest.map { $0 < now - trashRetentionNanoseconds } ?? false
    }

    /// True when the note is in the trash (its tombstone must stay).
    func isInTrash(_ db: Connection, _ id: NoteID) throws -> Bool {
        try db.queryOne("SELECT 1 FROM trash WHERE note_id = ?", id.description) { _ in true } ?? false
    }

    /// A tombstone the server has nothing to say about any more (it never
    /// knew the note, or forgot it): kept as a local tombstone, never sent,
    /// while the note is in the trash; otherwise its row goes.
    func forgetTombstone(_ db: Connection, _ row: NoteRow) throws {
        if try isInTrash(db, row.id) {
            try db.run(
                """
                UPDATE notes SET deleted = 1, server_version = NULL, base_exists = 0, base_title = NULL,
                    base_body = NULL, base_folder_id = NULL, synced_rev = local_rev WHERE seq = ?
                """, row.seq)
        } else {
            try db.run("DELETE FROM notes WHERE seq = ?", row.seq)
        }
    }

    /// Takes a note out of the trash for good: its entry goes, and so does
    /// its text unless the tombstone still has a change to send (a deletion
    /// held by the guard, which may yet be restored). A local tombstone
    /// that cannot be revived at its path any more goes whole.
    func forgetTrashEntry(_ db: Connection, noteID: NoteID) throws {
        try db.run("DELETE FROM trash WHERE note_id = ?", noteID)
        try db.run(
            """
            DELETE FROM notes WHERE id = ?1 AND deleted = 1 AND server_version IS NULL
              AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = ?1)
              AND NOT EXISTS (SELECT 1 FROM revivable r WHERE r.note_id = ?1)
            """, noteID)
        try db.run(
            """
            UPDATE notes SET body = x'' WHERE id = ?1 AND deleted = 1 AND (body_size > 0 OR chunk_bytes > 0)
              AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = ?1)
            """, noteID)
    }

    /// One bounded step of the trash's pruning: entries past the age, oldest
    /// first (those whose deletion still waits to be sent stay for now).
    /// Returns how many went.
    func pruneTrashStep() throws(StoreError) -> Int {
        try write(origin: .local, checkSpace: false) { db, _ -> Int in
            let old = try db.query(
                """
                SELECT t.seq, t.note_id FROM trash t WHERE t.deleted_ns < ?
                  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = t.note_id)
                ORDER BY t.seq LIMIT ?
                """, now - trashRetentionNanoseconds, Self.pruneStepEntriesMax
            ) { ($0.int64(0), NoteID($0.string(1))) }
            for (seq, id) in old {
                if let id {
                    try forgetTrashEntry(db, noteID: id)
                } else {
                    // An entry naming no note id (a damaged row) is never listed; it goes at its age too.
                    try db.run("DELETE FROM trash WHERE seq = ?", seq)
                }
            }
            return old.count
        }
    }

    static func trashEntry(from row: Row) -> TrashEntry? {
        guard let id = NoteID(row.string(1)) else { return nil }
        return TrashEntry(
            seq: row.int64(0), noteID: id, path: row.string(2), size: row.int64(3), deletedNanoseconds: row.int64(4),
            origin: TrashOrigin(stored: row.string(5)))
    }

    /// The oldest deletion time the trash still shows.
    var trashCutoff: Int64 { now - trashRetentionNanoseconds }

    /// The entries the trash shows that meet `condition` (SQL starting with
    /// ` AND`, over `t` and `n`), most recently deleted first.
    func trashEntries(_ db: Connection, where condition: String = "", _ arguments: [any SQLBindable] = []) throws
        -> [TrashEntry]
    {
        try db.query(
            TrashTable.columnsSQL + " " + TrashTable.visibleSQL + condition
                + " ORDER BY t.deleted_ns DESC, t.seq DESC",
            arguments: [trashCutoff] + arguments, map: Self.trashEntry
        ).compactMap { $0 }
    }

    /// True when the trash shows a note below the folder path `path`.
    func trashFolderExists(_ db: Connection, _ path: String) throws -> Bool {
        try db.queryOne(
            "SELECT 1 " + TrashTable.visibleSQL + " AND t.path > ? AND t.path < ? LIMIT 1",
            trashCutoff, path + "/", path + "0"
        ) { _ in true } ?? false
    }

    /// Every note in the trash, most recently deleted first.
    func trashEntries() throws(StoreError) -> [TrashEntry] {
        try read { db in try trashEntries(db) }
    }

    /// The notes in the trash under the folder path `directory` ("" for all).
    func trashEntries(under directory: String) throws(StoreError) -> [TrashEntry] {
        try read { db in try trashEntries(db, under: directory) }
    }

    func trashEntries(_ db: Connection, under directory: String) throws -> [TrashEntry] {
        guard !directory.isEmpty else { return try trashEntries(db) }
        // Paths compare as bytes: those starting `dir/` sort from `dir/` up to `dir0`.
        return try trashEntries(db, where: " AND t.path > ? AND t.path < ?", [directory + "/", directory + "0"])
    }

    /// The trash entry `seq`, if the trash still shows it.
    func trashEntry(_ seq: Int64) throws(StoreError) -> TrashEntry? {
        try read { db in try trashEntries(db, where: " AND t.seq = ?", [seq]).first }
    }

    /// What `name` stands for in the trash folder `directory` ("" is the
    /// trash itself), as `TrashTree` shows it; reads only the entries at
    /// that path and whether a folder of that name exists.
    func trashNode(named name: String, in directory: String) throws(StoreError) -> TrashNode? {
        guard !name.isEmpty, !name.contains("/") else { return nil }
        return try read { db in
            if let seq = HistoryEntry.seq(fromName: name),
                let entry = try trashEntries(db, where: " AND t.seq = ?", [seq]).first, entry.directory == directory
            {
                let siblings = try trashEntries(db, where: " AND t.path = ?", [entry.path])
                let shown = TrashTree.shownName(
                    of: entry, among: siblings, folderHasName: try trashFolderExists(db, entry.path))
                if shown == name { return .note(entry) }
            }
            let path = directory.isEmpty ? name : directory + "/" + name
            if try trashFolderExists(db, path) { return .directory(path: path) }
            return try trashEntries(db, where: " AND t.path = ?", [path]).first.map(TrashNode.note)
        }
    }

    /// The last text of a note in the trash.
    func trashBody(_ seq: Int64) throws(StoreError) -> Data {
        try read { db in
            guard let id = try trashEntries(db, where: " AND t.seq = ?", [seq]).first?.noteID,
                let row = try NoteRow.load(db, id: id)
            else { throw StoreError.notFound("trash entry \(seq)") }
            return row.body
        }
    }

    /// Brings a note in the trash back as the same note with its last text,
    /// as an edit that syncs: a note the server knows is put on its
    /// tombstone's version, which revives it on every machine; one it never
    /// knew is sent as new. Returns the note's id.
    @discardableResult
    func restoreFromTrash(_ seq: Int64, to destination: TrashDestination = .original) throws(StoreError)
        -> NoteID
    {
        try write(origin: .local) { db, commit in
            guard let entry = try trashEntries(db, where: " AND t.seq = ?", [seq]).first else {
                throw StoreError.notFound("trash entry \(seq)")
            }
            try restore(db, entry, to: destination, commit: &commit)
            return entry.noteID
        }
    }

    /// Brings back every note in the trash folder `path`: each to its own
    /// folder (`.original`), or into the folder `destination` names (made
    /// there, or an empty one there), along their paths below `path`.
    @discardableResult
    func restoreTrashDirectory(_ path: String, to destination: TrashDestination = .original)
        throws(StoreError) -> [NoteID]
    {
        try write(origin: .local) { db, commit in
            let entries = try trashEntries(db, under: path)
            guard !entries.isEmpty else { throw StoreError.notFound("trash folder '\(path)'") }
            guard case .at(let parent, let name) = destination else {
                for entry in entries { try restore(db, entry, to: .original, commit: &commit) }
                return entries.map(\.noteID)
            }
            let top = try folderForRestore(db, in: parent, name: name, commit: &commit)
            for entry in entries {
                var directory = top
                for component in entry.path.dropFirst(path.count + 1).split(separator: "/").dropLast() {
                    directory = try folderForRestore(db, in: directory, name: String(component), reuse: true,
                                                     commit: &commit)
                }
                try restore(db, entry, into: directory, commit: &commit)
            }
            return entries.map(\.noteID)
        }
    }

    /// Forgets every note the trash shows: nothing changes on the server or
    /// on other machines. Returns how many went.
    @discardableResult
    func emptyTrash() throws(StoreError) -> Int {
        try write(origin: .local, checkSpace: false) { db, _ in
            let entries = try trashEntries(db)
            for entry in entries { try forgetTrashEntry(db, noteID: entry.noteID) }
            return entries.count
        }
    }

    private func restore(
        _ db: Connection, _ entry: TrashEntry, to destination: TrashDestination, commit: inout StoreCommit
    ) throws {
        switch destination {
        case .original:
            guard let row = try NoteRow.load(db, id: entry.noteID) else { throw StoreError.notFound(entry.path) }
            let directory = try restoreDirectory(db, deletedFrom: row.folderID, path: entry.path, commit: &commit)
            try restore(db, entry, into: directory, commit: &commit)
        case .at(let directory, let name):
            try requireDirectory(db, directory)
            try validateNewName(directory, name)
            guard !isLocalOnly(directory, name) else {
                throw StoreError.notPermitted("a note cannot come back under a local-only name")
            }
            if try lookup(db, in: directory, name: name) != nil { throw StoreError.alreadyExists(name) }
            // Moved out under its own name (plain or distinct), it keeps its title.
            let title = name == entry.fileName || name == entry.distinctName ? nil : NameCodec.title(forName: name)
            try restore(db, entry, into: directory, title: title, commit: &commit)
            if title != nil { try forceName(db, entry: .note(entry.noteID), in: directory, name: name, commit: &commit) }
        }
    }

    private func restore(
        _ db: Connection, _ entry: TrashEntry, into directory: DirectoryRef, title: String? = nil,
        commit: inout StoreCommit
    ) throws {
        guard let row = try NoteRow.load(db, id: entry.noteID), row.deleted else {
            throw StoreError.notFound(entry.path)
        }
        guard !directory.isLocalOnly else {
            throw StoreError.notPermitted("notes cannot live in local-only directories")
        }
        let content = NoteContent(title: title ?? row.title, body: row.body, folderID: folderID(of: directory))
        try reviveNote(db, row, content: content, commit: &commit)
    }

    /// The folder `name` in `directory` for restored notes: a new one, or an
    /// existing one when `reuse` is set or it is empty (as rename(2) lets a
    /// directory replace an empty one).
    private func folderForRestore(
        _ db: Connection, in directory: DirectoryRef, name: String, reuse: Bool = false, commit: inout StoreCommit
    ) throws -> DirectoryRef {
        try requireDirectory(db, directory)
        try validateNewName(directory, name)
        guard !isLocalOnly(directory, name) else {
            throw StoreError.notPermitted("notes cannot come back into a local-only directory")
        }
        guard let existing = try NameRow.find(db, in: directory, name: name) else {
            return .folder(try makeFolder(db, in: directory, name: name, mode: 0o755, commit: &commit))
        }
        guard case .folder(let id) = existing.entry else { throw StoreError.notADirectory(name) }
        if !reuse {
            let hasChildren = try db.queryOne(
                "SELECT 1 FROM names WHERE parent_key = ? LIMIT 1", DirectoryRef.folder(id).key) { _ in true } ?? false
            guard !hasChildren else { throw StoreError.notEmpty(name) }
        }
        return .folder(id)
    }
}
