import CSQLite

/// An error reported by SQLite, with the result code, SQLite's own message and
/// the SQL that was running, so a log line alone is enough to find the cause.
public struct SQLiteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The primary result code (`SQLITE_BUSY`, `SQLITE_CORRUPT`, ...).
    public let code: Int32
    /// The extended result code, which tells apart e.g. the kinds of constraint failure.
    public let extendedCode: Int32
    /// SQLite's message for this failure.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    public init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        self.code = code & 0xFF
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
    }

    public var description: String {
        var text = "SQLite error \(extendedCode): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }

    /// True when another process holds the database lock past the busy timeout.
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    /// True when the file is not a database or is damaged.
    public var isCorrupt: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
    /// True when the disk (or the database's size limit) is full.
    public var isDiskFull: Bool { code == SQLITE_FULL }
    /// True for a UNIQUE, FOREIGN KEY, CHECK or NOT NULL violation.
    public var isConstraint: Bool { code == SQLITE_CONSTRAINT }
}
