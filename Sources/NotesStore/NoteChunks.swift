import Foundation
import SQLiteKit

/// A large note's body kept in fixed-size pieces (`note_chunks`), so that a
/// write the kernel sends costs the pieces it touches, not the whole note:
/// 16 MiB written in 4 KiB pieces used to rewrite the note 4,096 times.
///
/// Only the kernel's writes and truncations create or change chunks. Every
/// other writer (an edit, a merge, a pull) sets `notes.body`, and the
/// `notes_unchunk` trigger then drops the chunks, so code that reads or writes
/// the body whole needs to know nothing of them beyond `NoteRow.load`.
/// Piece `i` holds bytes `i * chunkBytes ..< (i + 1) * chunkBytes`; every
/// piece but the last is full, and the pieces add up to `body_size`.
enum NoteChunks {
    /// A SQL expression for the whole text of a note row: the body, or its
    /// chunks joined in order (the subquery's order survives: SQLite does not
    /// flatten an ordered subquery into an aggregate).
    static func textSQL(seq: String, chunkBytes: String, body: String) -> String {
        """
        CASE \(chunkBytes) WHEN 0 THEN \(body) ELSE CAST(COALESCE((SELECT group_concat(data, '') FROM \
        (SELECT data FROM note_chunks WHERE note_seq = \(seq) ORDER BY idx)), x'') AS BLOB) END
        """
    }

    /// The text of a note row named `alias` in a query.
    static func textSQL(of alias: String) -> String {
        textSQL(seq: "\(alias).seq", chunkBytes: "\(alias).chunk_bytes", body: "\(alias).body")
    }

    /// The whole body of a chunked note.
    static func assemble(_ db: Connection, seq: Int64, size: Int64) throws -> Data {
        var body = Data(capacity: Int(size))
        try db.forEachRow("SELECT data FROM note_chunks WHERE note_seq = ? ORDER BY idx", arguments: [seq]) { row in
            body.append(row.data(0))
            return true
        }
        return body
    }

    /// Up to `count` bytes from `offset` of a chunked body of `size` bytes.
    static func read(
        _ db: Connection, seq: Int64, chunkBytes: Int64, size: Int64, offset: Int64, count: Int
    ) throws -> Data {
        let end = min(size, offset + Int64(count))
        guard offset < end else { return Data() }
        var bytes = Data(capacity: Int(end - offset))
        try db.forEachRow(
            "SELECT idx, data FROM note_chunks WHERE note_seq = ? AND idx BETWEEN ? AND ? ORDER BY idx",
            arguments: [seq, offset / chunkBytes, (end - 1) / chunkBytes]
        ) { row in
            let start = row.int64(0) * chunkBytes
            let data = row.data(1)
            let from = max(offset, start) - start
            let to = min(end, start + Int64(data.count)) - start
            if from < to { bytes.append(data[data.startIndex + Int(from)..<data.startIndex + Int(to)]) }
            return true
        }
        return bytes
    }

    /// Stores `body` as chunks of `chunkBytes` (the row's own chunks must be gone).
    static func store(_ db: Connection, seq: Int64, body: Data, chunkBytes: Int64) throws {
        var start = 0
        var index: Int64 = 0
        while start < body.count {
            let end = min(body.count, start + Int(chunkBytes))
            try db.run(
                "INSERT INTO note_chunks(note_seq, idx, data) VALUES (?, ?, ?)", seq, index,
                body.subdata(in: body.startIndex + start..<body.startIndex + end))
            start = end
            index += 1
        }
    }

    /// Writes `bytes` at `offset` into a chunked body of `size` bytes (a gap
    /// past the end reads as zeros, as in a file). Returns the new size.
    static func write(
        _ db: Connection, seq: Int64, chunkBytes: Int64, size: Int64, offset: Int64, bytes: Data
    ) throws -> Int64 {
        let end = offset + Int64(bytes.count)
        let newSize = max(size, end)
        // Zeros from the old end to the write, then the write itself.
        if offset > size { try fill(db, seq: seq, chunkBytes: chunkBytes, from: size, to: offset) }
        var index = offset / chunkBytes
        while index * chunkBytes < end {
            let start = index * chunkBytes
            let pieceEnd = min(newSize, start + chunkBytes)
            let existing = try chunk(db, seq: seq, index: index)
            var piece = existing ?? Data()
            if Int64(piece.count) < pieceEnd - start { piece.append(Data(count: Int(pieceEnd - start) - piece.count)) }
            let from = max(offset, start)
            let to = min(end, pieceEnd)
            piece.replaceSubrange(
                piece.startIndex + Int(from - start)..<piece.startIndex + Int(to - start),
                with: bytes[bytes.startIndex + Int(from - offset)..<bytes.startIndex + Int(to - offset)])
            try put(db, seq: seq, index: index, piece, replacing: existing != nil)
            index += 1
        }
        return newSize
    }

    /// Cuts or zero-extends a chunked body of `size` bytes to `newSize`.
    static func resize(_ db: Connection, seq: Int64, chunkBytes: Int64, size: Int64, to newSize: Int64) throws {
        if newSize > size {
            try fill(db, seq: seq, chunkBytes: chunkBytes, from: size, to: newSize)
            return
        }
        let kept = (newSize + chunkBytes - 1) / chunkBytes
        try db.run("DELETE FROM note_chunks WHERE note_seq = ? AND idx >= ?", seq, kept)
        let tail = newSize - (kept - 1) * chunkBytes
        if kept > 0, tail < chunkBytes, let last = try chunk(db, seq: seq, index: kept - 1), last.count > Int(tail) {
            try db.run(
                "UPDATE note_chunks SET data = ? WHERE note_seq = ? AND idx = ?", Data(last.prefix(Int(tail))), seq,
                kept - 1)
        }
    }

    /// Appends zeros to a chunked body of `size` bytes from `from` (its end) to `to`.
    private static func fill(_ db: Connection, seq: Int64, chunkBytes: Int64, from: Int64, to: Int64) throws {
        var position = from
        while position < to {
            let index = position / chunkBytes
            let start = index * chunkBytes
            let pieceEnd = min(to, start + chunkBytes)
            let existing = position > start ? try chunk(db, seq: seq, index: index) : nil
            var piece = existing ?? Data()
            piece.append(Data(count: Int(pieceEnd - start) - piece.count))
            try put(db, seq: seq, index: index, piece, replacing: existing != nil)
            position = pieceEnd
        }
    }

    /// An existing piece is updated in place: SQLite then rewrites only its
    /// own pages, where a delete and insert would also move its index entry
    /// and its row id.
    private static func put(_ db: Connection, seq: Int64, index: Int64, _ piece: Data, replacing: Bool) throws {
        if replacing {
            try db.run("UPDATE note_chunks SET data = ? WHERE note_seq = ? AND idx = ?", piece, seq, index)
        } else {
            try db.run("INSERT INTO note_chunks(note_seq, idx, data) VALUES (?, ?, ?)", seq, index, piece)
        }
    }

    private static func chunk(_ db: Connection, seq: Int64, index: Int64) throws -> Data? {
        try db.queryOne("SELECT data FROM note_chunks WHERE note_seq = ? AND idx = ?", seq, index) { $0.data(0) }
    }

    /// Takes a note out of the search index before a chunk write changes
    /// its text (see `SearchIndex.markForSearch`).
    static func markForSearch(_ db: Connection, seq: Int64) throws {
        try SearchIndex.markForSearch(db, seq: seq)
    }
}
