import CSQLite
import Foundation

/// A view of the current row of a stepping statement. Columns are read by index.
public struct Row {
    let statement: Statement

    public var columnCount: Int { Int(sqlite3_column_count(statement.handle)) }

    public func isNull(_ index: Int) -> Bool {
        sqlite3_column_type(statement.handle, Int32(index)) == SQLITE_NULL
    }

    public func int64(_ index: Int) -> Int64 {
        sqlite3_column_int64(statement.handle, Int32(index))
    }

    public func int(_ index: Int) -> Int {
        Int(sqlite3_column_int64(statement.handle, Int32(index)))
    }

    public func optionalInt64(_ index: Int) -> Int64? {
        isNull(index) ? nil : int64(index)
    }

    public func bool(_ index: Int) -> Bool {
        int64(index) != 0
    }

    public func double(_ index: Int) -> Double {
        sqlite3_column_double(statement.handle, Int32(index))
    }

    /// The column as text; NULL reads as the empty string.
    public func string(_ index: Int) -> String {
        optionalString(index) ?? ""
    }

    public func optionalString(_ index: Int) -> String? {
        guard let text = sqlite3_column_text(statement.handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(statement.handle, Int32(index)))
        let buffer = UnsafeBufferPointer(start: text, count: count)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The column as bytes; NULL reads as empty data.
    public func data(_ index: Int) -> Data {
        optionalData(index) ?? Data()
    }

    public func optionalData(_ index: Int) -> Data? {
        let column = Int32(index)
        switch sqlite3_column_type(statement.handle, column) {
        case SQLITE_NULL:
            return nil
        case SQLITE_TEXT:
            // Reading text as bytes keeps its exact encoding.
            guard let text = sqlite3_column_text(statement.handle, column) else { return Data() }
            return Data(bytes: text, count: Int(sqlite3_column_bytes(statement.handle, column)))
        default:
            let count = Int(sqlite3_column_bytes(statement.handle, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement.handle, column) else {
                return Data()
            }
            return Data(bytes: bytes, count: count)
        }
    }

    /// Lends the column's bytes (NULL reads as empty) without copying them; the
    /// buffer is valid only inside `body`.
    public func withBytes<T>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        let column = Int32(index)
        let start = sqlite3_column_type(statement.handle, column) == SQLITE_TEXT
            ? UnsafeRawPointer(sqlite3_column_text(statement.handle, column))
            : sqlite3_column_blob(statement.handle, column)
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        guard let start, count > 0 else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: count))
    }

    public func value(_ index: Int) -> SQLValue {
        let column = Int32(index)
        switch sqlite3_column_type(statement.handle, column) {
        case SQLITE_INTEGER: return .integer(int64(index))
        case SQLITE_FLOAT: return .real(double(index))
        case SQLITE_TEXT: return .text(string(index))
        case SQLITE_BLOB: return .blob(data(index))
        default: return .null
        }
    }
}
