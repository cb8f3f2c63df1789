import Foundation
import SQLiteKit

// What the mount needs beyond the per-operation calls.
extension NotesStore {
    /// At unmount: moves every commit from the write-ahead log into the
    /// database file and empties the log, so `notes.sqlite` alone holds
    /// everything (a backup that copies only that file misses nothing).
    /// Returns false when another process was reading and part of the log
    /// stays (still safe: SQLite replays it at the next open).
    func checkpointForShutdown() throws(StoreError) -> Bool {
        try StoreError.wrap { try queue.sync { db in try db.checkpointAndTruncateLog() } }
    }

    /// At mount: gives the write-ahead log its full size up front (zeros up to
    /// the checkpoint size, synced), since unmount empties it. Until a log
    /// reaches that size every commit grows the file, and each `fsync()` then
    /// also writes the file's size: ~240 against ~135 µs per sync, measured
    /// here. Skipped (returning 0) when the disk has little room to spare.
    /// Returns the bytes added.
    func prepareWriteAheadLog() throws(StoreError) -> Int64 {
        try StoreError.wrap {
            try queue.write { db in
                let pageSize = try db.queryOne("PRAGMA page_size") { $0.int64(0) } ?? 4_096
                // The log's header, then one frame (a 24-byte header and a page) per page.
                let bytes = 32 + Int64(Self.walCheckpointPages) * (24 + pageSize)
                guard let free = freeDiskBytes(),
                    free - bytes > configuration.diskReserveBytes + Self.freeSpaceMarginBytes
                else { return 0 }
                return try db.extendWriteAheadLog(toBytes: bytes)
            }
        }
    }

    /// `createFile` and the new entry's inode number in one transaction (the
    /// mount's `create`: one commit per created file, not one for the file and
    /// another for its number).
    func createFileNumbered(
        in directory: DirectoryRef, name: String, mode: UInt32 = 0o644, exclusive: Bool = true
    ) throws(StoreError) -> (entry: Entry, inode: UInt64) {
        try write(origin: .local) { db, commit in
            let (entry, isNew) = try createFile(
                db, in: directory, name: name, mode: mode, exclusive: exclusive, commit: &commit)
            // A new entry has no number yet: no need to look for one.
            return (entry, isNew ? try newInodeNumber(db, for: entry.ref) : try inodeNumber(db, making: entry.ref))
        }
    }

    /// The inode number of `ref` inside the caller's write transaction, made
    /// from the counter the first time.
    func inodeNumber(_ db: Connection, making ref: EntryRef) throws -> UInt64 {
        if ref == .root { return 1 }
        if let existing = try inodeNumber(db, for: ref) { return existing }
        return try newInodeNumber(db, for: ref)
    }

    /// A number from the counter for `ref`, which has none (the unique index
    /// on the entry refuses a second).
    func newInodeNumber(_ db: Connection, for ref: EntryRef) throws -> UInt64 {
        try db.run("INSERT INTO inodes(entry_kind, entry_id) VALUES (?, ?)", ref.kindCode, ref.idText)
        return UInt64(db.lastInsertRowID)
    }

    /// The inode numbers of many entries at once (a directory listing), made
    /// from the counter where missing, in at most one read and one write
    /// transaction.
    func inodes(for refs: [EntryRef]) throws(StoreError) -> [EntryRef: UInt64] {
        var result: [EntryRef: UInt64] = [:]
        var missing: [EntryRef] = []
        for ref in refs {
            if ref == .root {
                result[ref] = 1
            } else {
                missing.append(ref)
            }
        }
        guard !missing.isEmpty else { return result }
        let found: [EntryRef: UInt64] = try read { db in
            var found: [EntryRef: UInt64] = [:]
            for ref in missing {
                if let number = try inodeNumber(db, for: ref) { found[ref] = number }
            }
            return found
        }
        result.merge(found) { first, _ in first }
        let unnumbered = missing.filter { found[$0] == nil }
        guard !unnumbered.isEmpty else { return result }
        let made: [EntryRef: UInt64] = try write(origin: .local, checkSpace: false) { db, _ in
            var made: [EntryRef: UInt64] = [:]
            for ref in unnumbered {
                if let existing = try inodeNumber(db, for: ref) {
                    made[ref] = existing
                    continue
                }
                try db.run("INSERT INTO inodes(entry_kind, entry_id) VALUES (?, ?)", ref.kindCode, ref.idText)
                made[ref] = UInt64(db.lastInsertRowID)
            }
            return made
        }
        result.merge(made) { first, _ in first }
        return result
    }
}

extension NotesStore {
    /// A number that changes whenever another connection (another process,
    /// such as `notesfs restore`) committed to the database.
    func externalChangeCounter() throws(StoreError) -> Int64 {
        try StoreError.wrap {
            try queue.sync { db in try db.queryOne("PRAGMA data_version") { $0.int64(0) } ?? 0 }
        }
    }
}
