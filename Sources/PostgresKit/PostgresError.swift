/// A failure talking to PostgreSQL, with PostgreSQL's SQLSTATE and message and
/// the SQL that was running, so one log line is enough to find the cause.
public struct PostgresError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The server answered with an error; `sqlState` says which.
        case server
        /// The connection could not be made or was lost.
        case connection
        /// Every connection of the pool was busy for too long, or too many
        /// callers were already waiting.
        case poolExhausted
        /// The pool or connection was closed.
        case closed
        /// A result did not have the shape the caller expected.
        case decoding
    }

    public let kind: Kind
    /// The five-character SQLSTATE (`40001`, `23505`, ...), when the server sent one.
    public let sqlState: String?
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    public init(_ kind: Kind, sqlState: String? = nil, message: String, sql: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
    }

    public var description: String {
        var text: String
        switch kind {
        case .server: text = "PostgreSQL error \(sqlState ?? "?????"): \(message)"
        case .connection: text = "PostgreSQL connection failed: \(message)"
        case .poolExhausted: text = "PostgreSQL pool exhausted: \(message)"
        case .closed: text = "PostgreSQL pool closed: \(message)"
        case .decoding: text = "unexpected PostgreSQL result: \(message)"
        }
        if let sql { text += " (while running: \(sql.prefix(200)))" }
        return text
    }

    /// A serialization failure or a deadlock: the transaction was rolled back
    /// whole and may simply run again.
    public var isRetryableTransaction: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// The database is unreachable, restarting or shutting down: retrying later may work.
    public var isUnavailable: Bool {
        switch kind {
        case .connection, .poolExhausted, .closed: return true
        case .decoding: return false
        case .server:
            guard let state = sqlState else { return false }
            // 08: connection exception; 57P01-03: admin/crash shutdown, cannot
            // connect now; 53300: too many connections; 53100: disk full.
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300", "53100"].contains(state)
        }
    }

    /// A unique constraint was violated.
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
