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
/// Piece `i` holds bytes `i * chunkBytes ..< (i + 1) * chunkBytes`, and
/// `body_size` says where the text ends. Pieces are written `chunkBytes`
/// long, the last one padded with zeros (bytes past `body_size` are always
/// zeros): an update that keeps a row's size lets SQLite overwrite the
/// row's pages in place and write only those whose bytes changed, so a
/// 4 KiB write dirties one or two pages of its piece instead of freeing and
/// allocating the piece's whole overflow chain. Stores from before the
/// padding have a shorter last piece; every reader stops at `body_size`, and
/// a write pads such a piece when it next touches it.
///
/// A write that starts a new piece and leaves part of it empty (an append
/// in pieces smaller than a chunk) adds `sparePieces` zero pieces after it
/// (schema 12): the next writes go into pieces that exist, in place, and
/// the cost of growing the table (the leaf cell, the index entry, the
/// pointer-map page, the database header) is paid once per spare run, not
/// once per piece. Spare pieces lie past `body_size`, so they are zeros like
/// every byte there; a cut removes them with the rest.
enum NoteChunks {
    /// How many zero pieces an append that starts a piece adds after it.
    static let sparePieces: Int64 = 15

    /// A SQL expression for the text of a note row as the schema's triggers
    /// read it: the body, or its chunks joined whole in order (the
    /// subquery's order survives: SQLite does not flatten an ordered
    /// subquery into an aggregate). A padded last piece's zeros come along;
    /// they make no search tokens, so removing a note from the index with
    /// this text removes exactly what `textSQL(of:)` indexed. Part of the
    /// stored schema: do not change it.
    static func textSQL(seq: String, chunkBytes: String, body: String) -> String {
        """
        CASE \(chunkBytes) WHEN 0 THEN \(body) ELSE CAST(COALESCE((SELECT group_concat(data, '') FROM \
        (SELECT data FROM note_chunks WHERE note_seq = \(seq) ORDER BY idx)), x'') AS BLOB) END
        """
    }

    /// The text of a note row: the body, or its chunks joined and cut at `size`.
    static func textSQL(seq: String, chunkBytes: String, body: String, size: String) -> String {
        """
        CASE \(chunkBytes) WHEN 0 THEN \(body) ELSE substr(CAST(COALESCE((SELECT group_concat(data, '') FROM \
        (SELECT data FROM note_chunks WHERE note_seq = \(seq) ORDER BY idx)), x'') AS BLOB), 1, \(size)) END
        """
    }

    /// The text of a note row named `alias` in a query.
    static func textSQL(of alias: String) -> String {
        textSQL(seq: "\(alias).seq", chunkBytes: "\(alias).chunk_bytes", body: "\(alias).body", size: "\(alias).body_size")
    }

    /// The whole body of a chunked note of `size` bytes.
    static func assemble(_ db: Connection, seq: Int64, size: Int64) throws -> Data {
        var body = Data(capacity: Int(size))
        try db.forEachRow("SELECT data FROM note_chunks WHERE note_seq = ? ORDER BY idx", arguments: [seq]) { row in
            body.append(row.data(0))
            return body.count < Int(size)
        }
        if body.count > Int(size) { body.removeSubrange(body.startIndex + Int(size)..<body.endIndex) }
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

    /// Stores `body` as chunks of `chunkBytes`, the last one padded (the
    /// row's own chunks must be gone).
    static func store(_ db: Connection, seq: Int64, body: Data, chunkBytes: Int64) throws {
        var start = 0
        var index: Int64 = 0
        while start < body.count {
            let end = min(body.count, start + Int(chunkBytes))
            var piece = body.subdata(in: body.startIndex + start..<body.startIndex + end)
            piece.count = Int(chunkBytes)
            try db.run("INSERT INTO note_chunks(note_seq, idx, data) VALUES (?, ?, ?)", seq, index, piece)
            start = end
            index += 1
        }
    }

    /// Writes `bytes` at `offset` into a chunked body of `size` bytes (a gap
    /// past the end reads as zeros, as in a file). Returns the new size.
    /// Spare pieces are added only below `spareLimit` bytes (the size cap).
    static func write(
        _ db: Connection, seq: Int64, chunkBytes: Int64, size: Int64, offset: Int64, bytes: Data, spareLimit: Int64
    ) throws -> Int64 {
        let end = offset + Int64(bytes.count)
        let newSize = max(size, end)
        try extend(db, seq: seq, chunkBytes: chunkBytes, size: size, before: offset / chunkBytes)
        let pieces = pieceCount(size: size, chunkBytes: chunkBytes)
        var index = offset / chunkBytes
        var startedPartly = false
        // Pieces always run without a hole from index 0: past the first
        // missing one there is none to write into.
        var sparesMayFollow = true
        while index * chunkBytes < end {
            let start = index * chunkBytes
            let from = max(offset, start)
            let to = min(end, start + chunkBytes)
            let part = bytes[bytes.startIndex + Int(from - offset)..<bytes.startIndex + Int(to - offset)]
            // A full piece: one in use, or a spare one past the end.
            if index < pieces || sparesMayFollow,
                try splice(db, seq: seq, index: index, part, at: from - start, chunkBytes: chunkBytes)
            {
                index += 1
                continue
            }
            if index >= pieces { sparesMayFollow = false }
            let existing = index < pieces ? try chunk(db, seq: seq, index: index) : nil
            var piece = existing ?? Data(count: Int(chunkBytes))
            if piece.count < Int(chunkBytes) { piece.count = Int(chunkBytes) }
            piece.replaceSubrange(piece.startIndex + Int(from - start)..<piece.startIndex + Int(to - start), with: part)
            try put(db, seq: seq, index: index, piece, replacing: existing != nil)
            startedPartly = existing == nil && to < start + chunkBytes
            index += 1
        }
        if startedPartly {
            var spare = index
            while spare < index + sparePieces, spare * chunkBytes < spareLimit {
                try db.run(addZeroPieceSQL, seq, spare, chunkBytes)
                spare += 1
            }
        }
        return newSize
    }

    /// Cuts or zero-extends a chunked body of `size` bytes to `newSize`.
    static func resize(_ db: Connection, seq: Int64, chunkBytes: Int64, size: Int64, to newSize: Int64) throws {
        if newSize > size {
            try extend(db, seq: seq, chunkBytes: chunkBytes, size: size, before: pieceCount(size: newSize, chunkBytes: chunkBytes))
            return
        }
        let kept = pieceCount(size: newSize, chunkBytes: chunkBytes)
        try db.run("DELETE FROM note_chunks WHERE note_seq = ? AND idx >= ?", seq, kept)
        let tail = newSize - (kept - 1) * chunkBytes
        // The cut bytes of the last piece become zeros: bytes past the end always are.
        if kept > 0, tail < chunkBytes, var last = try chunk(db, seq: seq, index: kept - 1) {
            last.count = Int(tail)
            last.count = Int(chunkBytes)
            try put(db, seq: seq, index: kept - 1, last, replacing: true)
        }
    }

    /// How many pieces a body of `size` bytes has.
    private static func pieceCount(size: Int64, chunkBytes: Int64) -> Int64 {
        (size + chunkBytes - 1) / chunkBytes
    }

    /// Makes pieces `0 ..< count` of a body of `size` bytes exist at their
    /// full length, before a write or a resize that reaches past them: a
    /// short last piece (a store from before the padding) is padded, and
    /// missing pieces are added as zeros. Nothing to do when `count` lies
    /// inside the pieces there are (the write pads the piece it touches).
    /// Spare pieces past the end are zeros already and stay as they are.
    private static func extend(_ db: Connection, seq: Int64, chunkBytes: Int64, size: Int64, before count: Int64) throws {
        let pieces = pieceCount(size: size, chunkBytes: chunkBytes)
        guard count >= pieces else { return }
        // Only a last piece that ends inside the text can be short: one that
        // the text fills to its end is `chunkBytes` long in every store.
        if pieces > 0, size % chunkBytes != 0 {
            try db.run(
                """
                UPDATE note_chunks SET data = data || zeroblob(? - length(data))
                WHERE note_seq = ? AND idx = ? AND length(data) < ?
                """, chunkBytes, seq, pieces - 1, chunkBytes)
        }
        for index in pieces..<count {
            try db.run(addZeroPieceSQL, seq, index, chunkBytes)
        }
    }

    /// Adds a piece of zeros, unless it exists (a spare piece, zeros already).
    private static let addZeroPieceSQL =
        "INSERT OR IGNORE INTO note_chunks(note_seq, idx, data) VALUES (?, ?, zeroblob(?))"

    /// An existing piece is updated in place: at the same length SQLite
    /// writes only the pages whose bytes changed, where a delete and insert
    /// would also move its index entry and its row id.
    private static func put(_ db: Connection, seq: Int64, index: Int64, _ piece: Data, replacing: Bool) throws {
        if replacing {
            try db.run("UPDATE note_chunks SET data = ? WHERE note_seq = ? AND idx = ?", piece, seq, index)
        } else {
            try db.run("INSERT INTO note_chunks(note_seq, idx, data) VALUES (?, ?, ?)", seq, index, piece)
        }
    }

    /// Puts `part` at `start` into a piece already `chunkBytes` long, in
    /// place (incremental blob I/O): the piece is neither read out nor built
    /// again, and SQLite writes only the pages the bytes fall on. False when
    /// the piece is missing or shorter (a store from before the padding).
    private static func splice(
        _ db: Connection, seq: Int64, index: Int64, _ part: Data, at start: Int64, chunkBytes: Int64
    ) throws -> Bool {
        guard let rowID = try db.queryOne(pieceRowIDSQL, seq, index, map: { $0.int64(0) }) else { return false }
        return try db.overwriteBlob(
            table: "note_chunks", column: "data", rowID: rowID, expectedByteCount: Int(chunkBytes), at: Int(start),
            with: part)
    }

    /// A piece's row id, read from the (note_seq, idx) index alone.
    private static let pieceRowIDSQL = "SELECT rowid FROM note_chunks WHERE note_seq = ? AND idx = ?"

    private static func chunk(_ db: Connection, seq: Int64, index: Int64) throws -> Data? {
        try db.queryOne("SELECT data FROM note_chunks WHERE note_seq = ? AND idx = ?", seq, index) { $0.data(0) }
    }

    /// Takes a note out of the search index before a chunk write changes
    /// its text (see `SearchIndex.markForSearch`).
    static func markForSearch(_ db: Connection, seq: Int64) throws {
        try SearchIndex.markForSearch(db, seq: seq)
    }
}
