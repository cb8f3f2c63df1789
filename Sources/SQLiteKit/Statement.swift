import CSQLite
import Foundation

/// A prepared statement owned by one `Connection`. It finalizes itself on deinit.
public final class Statement {
    let handle: OpaquePointer
    /// The SQL text, kept for error messages.
    public let sql: String
    private unowned let connection: Connection
    /// True once stepped since the last reset (counts one run per reset).
    private var started = false

    init(connection: Connection, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(
            connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw connection.error(code: code, sql: sql)
        }
        self.handle = statement
        self.sql = sql
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Clears previous bindings and state so the statement can run again.
    public func reset() {
        connection.work.virtualMachineSteps += Int64(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_VM_STEP, 1))
        started = false
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds `values` to parameters 1...n.
    public func bind(_ values: [any SQLBindable]) throws(SQLiteError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(
                code: SQLITE_RANGE,
                message: "statement takes \(expected) parameters but \(values.count) were given",
                sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value.sqlValue, at: Int32(offset + 1))
        }
    }

    private func bind(_ value: SQLValue, at index: Int32) throws(SQLiteError) {
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, index)
        case .integer(let number):
            code = sqlite3_bind_int64(handle, index, number)
        case .real(let number):
            code = sqlite3_bind_double(handle, index, number)
        case .text(let text):
            // An explicit byte length keeps text with NUL characters whole;
            // the string's own UTF-8 is bound (SQLite copies it), no array made.
            var text = text
            code = text.withUTF8 { buffer in
                guard let base = buffer.baseAddress, buffer.count > 0 else {
                    return sqlite3_bind_text64(handle, index, "", 0, csqlite_transient(), UInt8(SQLITE_UTF8))
                }
                return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { pointer in
                    sqlite3_bind_text64(
                        handle, index, pointer, sqlite3_uint64(buffer.count), csqlite_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let data):
            code = data.withUnsafeBytes { buffer in
                // A zero-length blob is bound as an empty blob, not NULL.
                guard let base = buffer.baseAddress, buffer.count > 0 else {
                    return sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite3_bind_blob64(
                    handle, index, base, sqlite3_uint64(buffer.count), csqlite_transient())
            }
        }
        guard code == SQLITE_OK else { throw connection.error(code: code, sql: sql) }
    }

    /// Advances one row. Returns false when the statement is done.
    public func step() throws(SQLiteError) -> Bool {
        if !started {
            started = true
            connection.work.statements += 1
        }
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW:
            connection.work.rows += 1
            return true
        case SQLITE_DONE: return false
        default: throw connection.error(code: code, sql: sql)
        }
    }

    /// The current row's columns; valid until the next `step` or `reset`.
    public var row: Row { Row(statement: self) }
}

@available(*, unavailable)
extension Statement: Sendable {}
