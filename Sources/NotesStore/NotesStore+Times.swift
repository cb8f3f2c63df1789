import Foundation
import NotesModel
import SQLiteKit

// Times as POSIX keeps them. The mtime is each entity's `updated_ns` (the
// root's lives in `entry_times`); the ctime and atime are facts of this
// machine, kept in `entry_times` (schema v6) and never synced: nothing here
// queues an outbox change. The ctime never goes back.
extension NotesStore {
    /// Sets the modification time (kept as the note's local `updated_at`, never synced).
    func setModified(_ ref: EntryRef, nanoseconds: Int64) throws(StoreError) {
        try setTimes(ref, accessed: nil, modified: nanoseconds)
    }

    /// `utimensat`: sets the atime, the mtime or both (nil leaves one alone);
    /// the ctime moves to now either way.
    func setTimes(_ ref: EntryRef, accessed: Int64?, modified: Int64?) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, commit in
            guard try recordStatusChange(db, ref, at: now, modified: modified, accessed: accessed) else {
                throw StoreError.notFound(ref.description)
            }
            if let modified {
                switch ref {
                case .note(let id):
                    try db.run("UPDATE notes SET updated_ns = ? WHERE id = ?", modified, id.description)
                case .folder(let id):
                    try db.run("UPDATE folders SET updated_ns = ? WHERE id = ?", modified, id.description)
                case .local(let seq):
                    try db.run("UPDATE local_entries SET updated_ns = ? WHERE seq = ?", modified, seq)
                case .root:
                    break  // recordStatusChange keeps the root's mtime
                }
            }
            commit.changedEntries.insert(ref)
        }
    }

    /// A change of status that alters no stored attribute (a `chown` to the
    /// owner it already has): only the ctime moves.
    func touchStatus(_ ref: EntryRef) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, commit in
            guard try recordStatusChange(db, ref, at: now) else { throw StoreError.notFound(ref.description) }
            commit.changedEntries.insert(ref)
        }
    }

    /// The mtime and recorded local times of a live entry, nil when it is
    /// gone. `knownModified`: the live entry's mtime as the caller read it
    /// in this transaction (not asked again).
    func currentTimes(
        _ db: Connection, _ ref: EntryRef, knownModified: Int64? = nil
    ) throws -> (modified: Int64, local: LocalTimes)? {
        let recorded = try db.queryOne(
            """
            SELECT changed_ns, changed_at_modified_ns, accessed_ns, modified_ns FROM entry_times
            WHERE entry_kind = ? AND entry_id = ?
            """, ref.kindCode, ref.idText
        ) { row in
            (LocalTimes(changedNanoseconds: row.optionalInt64(0), changedAtModifiedNanoseconds: row.optionalInt64(1),
                        accessedNanoseconds: row.optionalInt64(2)), row.optionalInt64(3))
        }
        let modified: Int64?
        if let knownModified, ref != .root {
            modified = knownModified
        } else {
            switch ref {
            case .note(let id):
                modified = try db.queryOne(
                    "SELECT updated_ns FROM notes INDEXED BY notes_listing WHERE id = ? AND deleted = 0",
                    id.description
                ) { $0.int64(0) }
            case .folder(let id):
                modified = try db.queryOne(
                    "SELECT updated_ns FROM folders WHERE id = ? AND deleted = 0", id.description) { $0.int64(0) }
            case .local(let seq):
                modified = try db.queryOne("SELECT updated_ns FROM local_entries WHERE seq = ?", seq) { $0.int64(0) }
            case .root:
                modified = recorded?.1 ?? openedNanoseconds
            }
        }
        guard let modified else { return nil }
        return (modified, recorded?.0 ?? LocalTimes())
    }

    /// Records that `ref`'s status changed at `time`: its ctime becomes the
    /// later of `time` and its ctime so far. Called before the caller sets a
    /// new mtime (`modified`), so a ctime recorded while the mtime is set into
    /// the past or the future stays exact. `accessed` sets the atime; an mtime
    /// change alone keeps the atime where it was (`touch -m`). Writes nothing
    /// when the entry would show the same times without a row. Returns false
    /// when the entry does not exist.
    @discardableResult
    func recordStatusChange(
        _ db: Connection, _ ref: EntryRef, at time: Int64, modified: Int64? = nil, accessed: Int64? = nil,
        knownModified: Int64? = nil
    ) throws -> Bool {
        guard let current = try currentTimes(db, ref, knownModified: knownModified) else { return false }
        let changed = max(time, current.local.changed(modified: current.modified))
        let modifiedAfter = modified ?? current.modified
        var accessedAfter = accessed ?? current.local.accessedNanoseconds
        if accessedAfter == nil && modifiedAfter != current.modified { accessedAfter = current.modified }
        if current.local == LocalTimes(), accessedAfter == nil, changed == modifiedAfter, ref != .root {
            return true
        }
        try db.run(
            """
            INSERT INTO entry_times(entry_kind, entry_id, changed_ns, changed_at_modified_ns, accessed_ns, modified_ns)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (entry_kind, entry_id) DO UPDATE SET changed_ns = excluded.changed_ns,
                changed_at_modified_ns = excluded.changed_at_modified_ns, accessed_ns = excluded.accessed_ns,
                modified_ns = excluded.modified_ns
            """, ref.kindCode, ref.idText, changed, modifiedAfter, accessedAfter,
            ref == .root ? modifiedAfter : nil)
        return true
    }

    /// Run at the end of every write transaction: each directory whose names
    /// changed (an entry created, removed or renamed in it, here or by a
    /// pull) takes now as its mtime and ctime, and each entry named anew
    /// (moved, renamed, revived) takes now as its ctime. Neither is a synced
    /// change: a folder's mtime is its local `updated_ns`, and no outbox row
    /// is written.
    func updateDirectoryTimes(_ db: Connection, _ commit: inout StoreCommit) throws {
        guard !commit.addedNames.isEmpty || !commit.removedNames.isEmpty else { return }
        let time = now
        var directories: Set<DirectoryRef> = []
        for name in commit.addedNames { directories.insert(name.directory) }
        for name in commit.removedNames { directories.insert(name.directory) }
        for directory in directories {
            if try touchDirectory(db, directory, at: time) { commit.directoriesModified[directory] = time }
        }
        var named: Set<EntryRef> = []
        for name in commit.addedNames where named.insert(name.entry).inserted {
            // A new entry shows its mtime as its ctime with no row: the
            // moment it was made. (Recording `time`, a few microseconds
            // later, cost a row and a page of the log for every created file.)
            if commit.madeAtTheirMtime.contains(name.entry) { continue }
            try recordStatusChange(db, name.entry, at: time)
        }
    }

    /// Sets a live directory's mtime to `time`; false when it is gone.
    private func touchDirectory(_ db: Connection, _ directory: DirectoryRef, at time: Int64) throws -> Bool {
        switch directory {
        case .root:
            try db.run(
                """
                INSERT INTO entry_times(entry_kind, entry_id, modified_ns) VALUES ('root', '', ?)
                ON CONFLICT (entry_kind, entry_id) DO UPDATE SET modified_ns = excluded.modified_ns
                """, time)
        case .folder(let id):
            try db.run("UPDATE folders SET updated_ns = ? WHERE id = ? AND deleted = 0", time, id.description)
        case .local(let seq):
            try db.run(
                "UPDATE local_entries SET updated_ns = ? WHERE seq = ? AND type = ?", time, seq,
                EntryKind.directory.rawValue)
        }
        return db.changes > 0
    }
}
