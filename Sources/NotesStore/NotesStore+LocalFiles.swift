import Foundation
import NotesModel
import SQLiteKit

// Local-only regular files up to `localInlineBytesMax` keep their bytes in
// their row (`data`, with `file` NULL): a temp file saved over a note, a swap
// file or a git ref costs one commit per write and one sync of the log per
// `fsync`, like a note. A larger one keeps them in `LocalFileDirectory`, one
// backing file per entry, and the row keeps the name's entry, kind, mode,
// times and size; a file that grows past the limit moves out (synced before
// the row stops holding its bytes) and never moves back. Each operation on a
// backing file changes it inside the transaction that changes the row,
// ordered so a crash at any point loses no acknowledged byte:
// - a file is made before the row naming it commits (an orphan otherwise,
//   removed by the next open's sweep);
// - a write or truncation changes the file, then the row's size commits; the
//   sweep takes each file's own size as the truth;
// - a file goes only after the deletion of its row committed (rename over,
//   unlink, rmdir, a rename across the local-only line).
extension NotesStore {
    /// The most bytes of old `local_entries.data` blobs moved to files per transaction at open.
    static let localMigrationBatchBytesMax = 32 << 20

    /// At open, when no other store has the directory: removes backing files
    /// no row names, corrects sizes to the files' own, and moves blobs larger
    /// than `inlineBytesMax` (from before schema 5) out of the database (best
    /// effort: a row left behind still reads from its blob and moves at its
    /// next write).
    static func sweepLocalFiles(
        _ db: Connection, _ files: LocalFileDirectory, inlineBytesMax: Int, newUUID: () -> UUID
    ) throws {
        let rows = try db.query("SELECT seq, file, size FROM local_entries WHERE file IS NOT NULL") {
            (seq: $0.int64(0), file: $0.string(1), size: $0.int64(2))
        }
        let named = Set(rows.map(\.file))
        for name in try files.names() where !named.contains(name) { try files.remove(name) }
        let wrong = try rows.compactMap { row -> (Int64, Int64)? in
            let actual = try files.size(of: row.file) ?? 0
            return actual == row.size ? nil : (row.seq, actual)
        }
        if !wrong.isEmpty {
            try db.transaction {
                for (seq, size) in wrong { try db.run("UPDATE local_entries SET size = ? WHERE seq = ?", size, seq) }
            }
        }
        do {
            try moveLocalBlobs(db, files, inlineBytesMax: inlineBytesMax, newUUID: newUUID)
        } catch {
            // Left for the rows' next writes; files made for an uncommitted batch are orphans.
        }
    }

    /// Moves large old blobs out in batches: the batch's files are made and
    /// synced, then one transaction points the rows at them and empties the blobs.
    private static func moveLocalBlobs(
        _ db: Connection, _ files: LocalFileDirectory, inlineBytesMax: Int, newUUID: () -> UUID
    ) throws {
        while true {
            let pending = try db.query(
                """
                SELECT seq, length(CAST(data AS BLOB)) FROM local_entries
                WHERE type = \(EntryKind.file.rawValue) AND file IS NULL AND length(CAST(data AS BLOB)) > ?
                ORDER BY seq LIMIT 1000
                """, max(0, inlineBytesMax)
            ) { (seq: $0.int64(0), size: $0.int64(1)) }
            guard !pending.isEmpty else { return }
            var batch: [(seq: Int64, name: String)] = []
            var bytes: Int64 = 0
            for item in pending {
                if !batch.isEmpty && bytes + item.size > Int64(localMigrationBatchBytesMax) { break }
                guard let row = try LocalRow.load(db, seq: item.seq) else { continue }
                let name = LocalFileDirectory.newName(newUUID())
                try files.create(name, bytes: row.data, durable: false)
                batch.append((item.seq, name))
                bytes += item.size
            }
            for item in batch { try files.sync(item.name, dataOnly: true, directory: false) }
            try files.syncDirectory()
            try db.transaction {
                for item in batch {
                    try db.run(
                        "UPDATE local_entries SET file = ?, data = x'' WHERE seq = ? AND file IS NULL",
                        item.name, item.seq)
                }
            }
        }
    }

    /// The backing file of a local regular file, made (holding its old blob,
    /// if any) in the caller's transaction when it has none yet.
    func backingFile(_ db: Connection, _ row: LocalRow) throws -> String {
        if let file = row.file { return file }
        let name = LocalFileDirectory.newName(newUUID())
        // A blob moved out exists nowhere else once the row commits.
        try localFiles.create(name, bytes: row.data, durable: !row.data.isEmpty)
        localFiles.created(name)
        try db.run("UPDATE local_entries SET file = ?, data = x'' WHERE seq = ?", name, row.seq)
        return name
    }

    /// True when a local file of `size` bytes keeps them in its row.
    func staysInline(_ row: LocalRow, size: Int64) -> Bool {
        row.file == nil && size <= Int64(configuration.localInlineBytesMax)
    }

    /// Writes `bytes` at `offset` of a local file: in its row while it stays
    /// small; else its row's size and time, then the bytes at that offset of
    /// its backing file. Returns the new size.
    func writeLocalFile(_ db: Connection, _ row: LocalRow, bytes: Data, at offset: Int64) throws -> Int64 {
        let size = max(row.size, offset + Int64(bytes.count))
        if staysInline(row, size: size) {
            let data = Self.splice(row.data, bytes, at: Int(offset))
            try db.run(
                "UPDATE local_entries SET data = ?, size = ?, updated_ns = ? WHERE seq = ?",
                data, Int64(data.count), now, row.seq)
            return Int64(data.count)
        }
        let name = try backingFile(db, row)
        try db.run("UPDATE local_entries SET size = ?, updated_ns = ? WHERE seq = ?", size, now, row.seq)
        if size > row.size { localFiles.extended(name, from: row.size) }
        try localFiles.write(name, bytes: bytes, at: offset)
        return size
    }

    /// Sets a local file's size (`ftruncate`; growing reads as zeros).
    func truncateLocalFile(_ db: Connection, _ row: LocalRow, to size: Int64) throws {
        if staysInline(row, size: size) {
            try db.run(
                "UPDATE local_entries SET data = ?, size = ?, updated_ns = ? WHERE seq = ?",
                Self.resized(row.data, to: Int(size)), size, now, row.seq)
            return
        }
        let name = try backingFile(db, row)
        try db.run("UPDATE local_entries SET size = ?, updated_ns = ? WHERE seq = ?", size, now, row.seq)
        if size > row.size { localFiles.extended(name, from: row.size) }
        try localFiles.truncate(name, to: size)
    }

    /// A local file's whole content (a rename to a synced name makes it a note's body).
    func localFileContents(_ db: Connection, _ row: LocalRow) throws -> Data {
        guard let file = row.file else { return row.data }
        return try localFiles.read(file, offset: 0, count: Int(row.size))
    }

    /// Up to `count` bytes of local entry `seq` from `offset`; nil when it is not a regular file.
    func readLocalFile(_ db: Connection, seq: Int64, offset: Int64, count: Int) throws -> Data? {
        let found = try db.queryOne(
            """
            SELECT file, size, CASE WHEN file IS NULL THEN substr(data, ?, ?) END
            FROM local_entries WHERE seq = ? AND type = \(EntryKind.file.rawValue)
            """, offset + 1, count, seq
        ) { row in (file: row.optionalString(0), size: row.int64(1), inline: row.data(2)) }
        guard let found else { return nil }
        guard let file = found.file else { return found.inline }
        let wanted = Int(clamping: max(0, min(Int64(count), found.size - offset)))
        return try localFiles.read(file, offset: offset, count: wanted)
    }

    /// Inserts a local regular file holding `data`: in its row when small,
    /// else in its own backing file, synced before the row commits: its bytes
    /// may exist nowhere else (a refused note's text, a note renamed to a
    /// local-only name).
    func insertLocalFileRow(
        _ db: Connection, data: Data, mode: UInt32, created: Int64, modified: Int64, origin: String?
    ) throws {
        var name: String?
        var inline = data
        if data.count > max(0, configuration.localInlineBytesMax) {
            let file = LocalFileDirectory.newName(newUUID())
            try localFiles.create(file, bytes: data, durable: true)
            localFiles.created(file)
            name = file
            inline = Data()
        }
        try db.run(
            """
            INSERT INTO local_entries(type, data, mode, created_ns, updated_ns, origin, file, size)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, EntryKind.file.rawValue, inline, Int64(mode), created, modified, origin, name, Int64(data.count))
    }

    /// Queues the removal of a deleted local entry's backing file for after the commit.
    func forgetLocalFile(_ db: Connection, seq: Int64) throws {
        let file = try db.queryOne("SELECT file FROM local_entries WHERE seq = ?", seq) { $0.optionalString(0) }
        if let file = file ?? nil { localFiles.removeAfterCommit(file) }
    }

    /// `durableSync()` for one file: a local file's backing file (and its
    /// directory entry) first, then the log holding its row.
    func durableSync(of ref: EntryRef, dataOnly: Bool) throws(StoreError) {
        try StoreError.wrap {
            try queue.sync { db in
                if case .local(let seq) = ref {
                    let file = try db.queryOne("SELECT file FROM local_entries WHERE seq = ?", seq) {
                        $0.optionalString(0)
                    }
                    if let file = file ?? nil { try localFiles.sync(file, dataOnly: dataOnly) }
                }
                try db.syncWriteAheadLog()
            }
        }
    }

    /// Bytes written to local files' backing files since the store opened.
    var localFileBytesWritten: Int64 { localFiles.bytesWritten }

    /// Where local-only files' bytes are kept (`<database>-local`).
    var localFilesPath: String { localFiles.path }
}
