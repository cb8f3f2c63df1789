import Foundation
import NotesModel
import SQLiteKit

// What the guard holds, and the two answers to it: confirm (send or apply
// the deletions) or restore (bring the notes back).
extension NotesStore {
    /// What the guard holds now, in each direction.
    func massDeleteHold() throws(StoreError) -> MassDeleteHold {
        try read { db in try massDeleteHold(db) }
    }

    func massDeleteHold(_ db: Connection) throws -> MassDeleteHold {
        var hold = MassDeleteHold()
        guard
            let (since, confirmed, deletions, live) = try db.queryOne(
                "SELECT held_since_ns, confirmed_ns, tripped_deletions, tripped_live FROM delete_guard WHERE id = 1",
                map: { ($0.optionalInt64(0), $0.optionalInt64(1), $0.int(2), $0.int(3)) }),
            let since
        else { return hold }
        hold.sinceNanoseconds = since
        hold.trippedDeletions = deletions
        hold.trippedLive = live
        (hold.notesToSend, hold.foldersToSend) = try pendingDeletionNotes(db, madeAfter: confirmed ?? Int64.min)
        var notes = Set<NoteID>()
        for pull in try effectiveHeldPulls(db) {
            if let id = pull.ref.noteID { notes.insert(id) }
            if let id = pull.ref.folderID {
                hold.foldersToApply += 1
                notes.formUnion(try liveNotes(inFolder: id, db))
            }
        }
        hold.notesToApply = notes.count
        let windowStart = max(since - Self.massDeleteWindowNanoseconds, confirmed ?? Int64.min)
        hold.removedHereBefore =
            try db.queryOne(
                "SELECT coalesce(sum(notes), 0) FROM deletion_log WHERE direction = 'pull' AND at_ns > ?", windowStart
            ) { $0.int(0) } ?? 0
        return hold
    }

    /// `notesfs sync --allow-mass-delete`: the held pulled deletions are
    /// applied now, the held local ones may be sent, and the window starts
    /// again (what was confirmed never counts again).
    @discardableResult
    func confirmMassDelete() throws(StoreError) -> MassDeleteRelease {
        try write(origin: .remote, checkSpace: false) { db, commit in
            var release = MassDeleteRelease()
            let state = try deleteGuardState(db)
            release.toSend = try pendingDeletionNotes(db, madeAfter: state.confirmed ?? Int64.min).notes
            try db.run("UPDATE delete_guard SET held_since_ns = NULL, confirmed_ns = ? WHERE id = 1", now)
            for pull in try effectiveHeldPulls(db) {
                let tombstone = RemoteEntity(pull.ref, version: pull.version, deleted: true)
                if case .applied = try applyOne(db, tombstone, commit: &commit), pull.ref.kind == .note {
                    release.removedHere += 1
                }
            }
            try db.run("DELETE FROM held_pulls")
            commit.outboxChanged = true
            return release
        }
    }

    /// `notesfs sync --restore-held`: cancels the held deletions. Notes and
    /// folders deleted here come back as edits on their last known version
    /// (so edits made elsewhere while the deletion was held, whose pulls the
    /// held row skipped, come back through a merge); those deleted elsewhere are pushed back
    /// as edits on the server's tombstone, so every machine gets them again.
    /// The window starts again.
    @discardableResult
    func restoreHeldDeletions() throws(StoreError) -> MassDeleteRestore {
        try write(origin: .local, checkSpace: false) { db, commit in
            var restore = MassDeleteRestore()
            let state = try deleteGuardState(db)
            if state.isHeld {
                restore.revivedHere = try reviveHeldTombstones(db, madeAfter: state.confirmed ?? Int64.min, commit: &commit)
            }
            for pull in try effectiveHeldPulls(db) {
                let table = pull.ref.kind == .note ? "notes" : "folders"
                // On the tombstone's version, the put revives it on the server.
                try db.run(
                    """
                    UPDATE \(table) SET server_version = ?, base_exists = 0, local_rev = local_rev + 1
                    WHERE id = ? AND deleted = 0
                    """, pull.version, pull.ref.idText)
                try enqueue(db, pull.ref, .put, commit: &commit)
                restore.sentBack += 1
            }
            try db.run("DELETE FROM held_pulls")
            try db.run("UPDATE delete_guard SET held_since_ns = NULL, confirmed_ns = ? WHERE id = 1", now)
            return restore
        }
    }

    /// Brings back every note and folder whose deletion is held here, folders
    /// first (so their notes are shown inside them again).
    func reviveHeldTombstones(_ db: Connection, madeAfter time: Int64, commit: inout StoreCommit) throws
        -> Int
    {
        let folders = try db.query(
            """
            SELECT f.id FROM outbox o JOIN folders f ON f.id = o.entity_id
            WHERE o.entity_kind = 'folder' AND o.op = 'delete' AND o.state = 'pending'
              AND f.deleted = 1 AND f.updated_ns > ?
            """, time
        ) { FolderID($0.string(0)) }.compactMap { $0 }
        let notes = try db.query(
            """
            SELECT n.id FROM outbox o JOIN notes n ON n.id = o.entity_id
            WHERE o.entity_kind = 'note' AND o.op = 'delete' AND o.state = 'pending'
              AND n.deleted = 1 AND n.updated_ns > ?
            """, time
        ) { NoteID($0.string(0)) }.compactMap { $0 }
        var revivedFolders: [FolderRow] = []
        for id in folders {
            guard let row = try FolderRow.load(db, id: id) else { continue }
            // Never clean, as for notes below.
            try reviveRow(db, table: "folders", .folder(id), seq: row.seq,
                          updated: row.updatedNanoseconds, commit: &commit)
            revivedFolders.append(row)
        }
        // Parents before children, so each is placed in a live directory.
        var depths: [FolderID: Int] = [:]
        for row in revivedFolders { depths[row.id] = try depth(db, row.id) }
        for row in revivedFolders.sorted(by: { depths[$0.id, default: 0] < depths[$1.id, default: 0] }) {
            commit.changedEntries.insert(.folder(row.id))
            let directory = try displayDirectory(db, folderID: row.parentID)
            try placeName(db, entry: .folder(row.id), in: directory, source: row.name, commit: &commit)
            try replaceChildren(of: row.id, db, commit: &commit)
        }
        for id in notes {
            guard let row = try NoteRow.load(db, id: id) else { continue }
            // Never clean: pulled versions newer than the base were skipped
            // while the deletion was held (a dirty row takes no pull), and the
            // cursor is past them. A put on the base meets them as a conflict
            // and takes them (or is applied when nothing moved).
            try reviveRow(db, table: "notes", .note(id), seq: row.seq,
                          updated: row.updatedNanoseconds, commit: &commit)
            try db.run("DELETE FROM revivable WHERE note_id = ?", id.description)
            commit.changedEntries.insert(.note(id))
            let directory = try displayDirectory(db, folderID: row.folderID)
            try placeName(db, entry: .note(id), in: directory, source: row.title, commit: &commit)
        }
        return folders.count + notes.count
    }

    /// Marks a tombstone live again, queued as a put on its last known version.
    func reviveRow(
        _ db: Connection, table: String, _ ref: EntityRef, seq: Int64, updated: Int64,
        commit: inout StoreCommit
    ) throws {
        try db.run(
            "UPDATE \(table) SET deleted = 0, updated_ns = ? WHERE seq = ?", max(now, updated + 1), seq)
        // A revived entry gets a fresh inode; the old one may still be cached as deleted.
        try db.run("DELETE FROM inodes WHERE entry_kind = ? AND entry_id = ?", ref.kind, ref.idText)
        try enqueue(db, ref, .put, commit: &commit)
    }

    /// How many ancestors a folder has (bounded, so a damaged cycle cannot loop).
    func depth(_ db: Connection, _ id: FolderID) throws -> Int {
        var depth = 0
        var next = try FolderRow.load(db, id: id)?.parentID
        while let parent = next, depth < 10_000 {
            depth += 1
            next = try FolderRow.load(db, id: parent)?.parentID
        }
        return depth
    }
}
