import CSQLite
import Foundation

// Incremental blob I/O (`sqlite3_blob_open`, `sqlite3_blob_write`): bytes
// written into a stored blob in place, without a statement that reads the
// value out and builds a new record. SQLite writes only the pages the bytes
// fall on (the row's leaf page, or one of its overflow pages).
extension Connection {
    /// Writes `bytes` at `offset` into the blob in `column` of the row with
    /// row id `rowID` of `table`, in place; the blob keeps its length. Returns
    /// false, writing nothing, when the blob is not `expectedByteCount` long.
    /// The row must exist, and the range must lie inside `expectedByteCount`.
    public func overwriteBlob(
        table: String, column: String, rowID: Int64, expectedByteCount: Int, at offset: Int, with bytes: Data
    ) throws(SQLiteError) -> Bool {
        guard offset >= 0, offset + bytes.count <= expectedByteCount, bytes.count <= Int(Int32.max) else {
            throw SQLiteError(
                code: SQLITE_RANGE,
                message: "cannot write \(bytes.count) bytes at \(offset) into a blob of \(expectedByteCount)",
                sql: nil)
        }
        var blob: OpaquePointer?
        let opened = sqlite3_blob_open(handle, "main", table, column, rowID, 1, &blob)
        // The handle is closed on every path (a failed open may still have made one).
        defer { sqlite3_blob_close(blob) }
        guard opened == SQLITE_OK, let blob else {
            throw error(code: opened, sql: "(blob write into \(table).\(column) of row \(rowID))")
        }
        guard Int(sqlite3_blob_bytes(blob)) == expectedByteCount else { return false }
        guard !bytes.isEmpty else { return true }
        let written = bytes.withUnsafeBytes { buffer in
            sqlite3_blob_write(blob, buffer.baseAddress, Int32(buffer.count), Int32(offset))
        }
        guard written == SQLITE_OK else {
            throw error(code: written, sql: "(blob write into \(table).\(column) of row \(rowID))")
        }
        work.statements += 1
        return true
    }
}
