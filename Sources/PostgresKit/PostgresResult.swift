import CPostgres
import Foundation

/// The rows of one statement, in PostgreSQL's binary format. Owns its
/// `PGresult` and frees it in `deinit`. Readers check the column's type and
/// throw `PostgresError.decoding` on a mismatch instead of guessing.
public final class PostgresResult {
    private let handle: OpaquePointer
    let sql: String

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit { PQclear(handle) }

    public var rowCount: Int { Int(PQntuples(handle)) }
    public var columnCount: Int { Int(PQnfields(handle)) }
    /// Rows changed by an INSERT, UPDATE or DELETE.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    public func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    private enum OID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let name: UInt32 = 19
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let text: UInt32 = 25
        static let varchar: UInt32 = 1043
        static let uuid: UInt32 = 2950
        static let void: UInt32 = 2278
    }

    private func bytes(_ row: Int, _ column: Int) throws(PostgresError) -> UnsafeRawBufferPointer {
        guard row < rowCount, column < columnCount else {
            throw mismatch("no row \(row), column \(column) in \(rowCount)×\(columnCount)")
        }
        guard let value = PQgetvalue(handle, Int32(row), Int32(column)) else {
            throw mismatch("no value at row \(row), column \(column)")
        }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(value), count: length)
    }

    private func type(_ column: Int) -> UInt32 { PQftype(handle, Int32(column)) }

    private func mismatch(_ message: String) -> PostgresError {
        PostgresError(.decoding, message: message, sql: sql)
    }

    private func bigEndian(_ buffer: UnsafeRawBufferPointer) -> Int64 {
        var value: Int64 = buffer.first.map { Int64(Int8(bitPattern: $0)) } ?? 0
        for byte in buffer.dropFirst() { value = value << 8 | Int64(byte) }
        return value
    }

    /// An integer column (int2, int4 or int8); NULL is an error.
    public func int64(_ row: Int, _ column: Int) throws(PostgresError) -> Int64 {
        guard !isNull(row, column) else { throw mismatch("column \(column) is NULL, expected an integer") }
        let buffer = try bytes(row, column)
        switch (type(column), buffer.count) {
        case (OID.int8, 8), (OID.int4, 4), (OID.int2, 2): return bigEndian(buffer)
        default: throw mismatch("column \(column) has type \(type(column)) and \(buffer.count) bytes, expected an integer")
        }
    }

    public func optionalInt64(_ row: Int, _ column: Int) throws(PostgresError) -> Int64? {
        isNull(row, column) ? nil : try int64(row, column)
    }

    public func int(_ row: Int, _ column: Int) throws(PostgresError) -> Int {
        Int(try int64(row, column))
    }

    public func bool(_ row: Int, _ column: Int) throws(PostgresError) -> Bool {
        guard !isNull(row, column) else { throw mismatch("column \(column) is NULL, expected a bool") }
        let buffer = try bytes(row, column)
        guard type(column) == OID.bool, buffer.count == 1 else {
            throw mismatch("column \(column) has type \(type(column)), expected bool")
        }
        return buffer[0] != 0
    }

    /// A text column as UTF-8 (a uuid column is given as its lowercased text).
    public func string(_ row: Int, _ column: Int) throws(PostgresError) -> String {
        guard !isNull(row, column) else { throw mismatch("column \(column) is NULL, expected text") }
        if type(column) == OID.uuid { return try uuid(row, column).uuidString.lowercased() }
        let buffer = try bytes(row, column)
        switch type(column) {
        case OID.text, OID.varchar, OID.name: return String(decoding: buffer, as: UTF8.self)
        default: throw mismatch("column \(column) has type \(type(column)), expected text")
        }
    }

    public func optionalString(_ row: Int, _ column: Int) throws(PostgresError) -> String? {
        isNull(row, column) ? nil : try string(row, column)
    }

    /// A bytea column; NULL reads as empty.
    public func data(_ row: Int, _ column: Int) throws(PostgresError) -> Data {
        if isNull(row, column) { return Data() }
        guard type(column) == OID.bytea else {
            throw mismatch("column \(column) has type \(type(column)), expected bytea")
        }
        let buffer = try bytes(row, column)
        return buffer.isEmpty ? Data() : Data(buffer)
    }

    public func uuid(_ row: Int, _ column: Int) throws(PostgresError) -> UUID {
        guard !isNull(row, column) else { throw mismatch("column \(column) is NULL, expected a uuid") }
        let buffer = try bytes(row, column)
        guard type(column) == OID.uuid, buffer.count == 16 else {
            throw mismatch("column \(column) has type \(type(column)), expected uuid")
        }
        let b = Array(buffer)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    public func optionalUUID(_ row: Int, _ column: Int) throws(PostgresError) -> UUID? {
        isNull(row, column) ? nil : try uuid(row, column)
    }
}

@available(*, unavailable)
extension PostgresResult: Sendable {}
