import Foundation
import NotesModel
import SQLiteKit

/// The note a kernel write goes to, read in one statement: what a chunked
/// write needs (its extent, whether it is already listed for search, its
/// pending outbox operation), and the whole row only when the body is not
/// chunked. A write into a large note comes thousands of times in a row;
/// reading the rest of the row (ids parsed, base copied) and two more
/// look-ups for each was a fifth of its cost.
struct KernelWriteTarget {
    var extent: NoteExtent
    var deleted: Bool
    /// The note is in `fts_pending`: already out of the search index.
    var listedForSearch: Bool
    /// The note's pending outbox operation; nil when none is pending.
    var queued: ChangeOperation?
    /// The row with its body, when it is not chunked and its body is at most
    /// the limit; nil otherwise (a caller that needs it reads it whole).
    var wholeRow: NoteRow?

    static func load(_ db: Connection, id: NoteID, bodyUpTo limit: Int64) throws -> KernelWriteTarget? {
        let ref = EntityRef.note(id)
        return try db.queryOne(select, id.description, limit, ref.kind, ref.idText) { row in
            let chunkBytes = row.int64(17)
            var wholeRow: NoteRow?
            if chunkBytes == 0, row.bool(19) {
                guard let found = NoteRow(row: row) else { return nil }
                wholeRow = found
            }
            return KernelWriteTarget(
                extent: NoteExtent(
                    seq: row.int64(0), title: row.string(3), chunkBytes: chunkBytes, size: row.int64(18),
                    synced: row.optionalInt64(9) != nil),
                deleted: row.bool(8), listedForSearch: row.bool(20),
                queued: row.optionalString(21).flatMap(ChangeOperation.init(rawValue:)), wholeRow: wholeRow)
        } ?? nil
    }

    /// `NoteRow.load(_:id:bodyUpTo:)`'s columns, then the two look-ups.
    private static let select = """
        SELECT seq, id, folder_id, title, CASE WHEN chunk_bytes = 0 AND body_size <= ?2 THEN body END, created_ns,
            updated_ns, mode, deleted, server_version, base_exists, base_title,
            CASE WHEN chunk_bytes = 0 AND body_size <= ?2 THEN base_body END, base_folder_id, local_rev, synced_rev,
            conflict_of, chunk_bytes, body_size, chunk_bytes = 0 AND body_size <= ?2,
            EXISTS (SELECT 1 FROM fts_pending p WHERE p.seq = notes.seq),
            (SELECT op FROM outbox o WHERE o.entity_kind = ?3 AND o.entity_id = ?4 AND o.state = 'pending')
        FROM notes WHERE id = ?1
        """
}

/// What a chunked write needs to know of a note, without its body.
struct NoteExtent {
    var seq: Int64
    var title: String
    var chunkBytes: Int64
    var size: Int64
    var synced: Bool

    static func load(_ db: Connection, id: NoteID) throws -> NoteExtent? {
        try db.queryOne(
            "SELECT seq, title, chunk_bytes, body_size, server_version IS NOT NULL FROM notes WHERE id = ? AND deleted = 0",
            id.description
        ) { NoteExtent(seq: $0.int64(0), title: $0.string(1), chunkBytes: $0.int64(2), size: $0.int64(3), synced: $0.bool(4)) }
    }
}
