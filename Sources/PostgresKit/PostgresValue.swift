import Foundation

/// One statement parameter. Parameters always travel separately from the SQL
/// text (`PQexecParams`), never spliced into it.
public enum PostgresValue: Sendable, Hashable {
    case null
    /// Sent with an unspecified type, so PostgreSQL infers it from the
    /// statement (text, uuid, a text[] literal...); add a cast where it cannot.
    case text(String)
    case int(Int64)
    case bool(Bool)
    /// Sent in binary as `bytea`.
    case bytes(Data)
}

/// Things that can be passed as a parameter.
public protocol PostgresBindable {
    var postgresValue: PostgresValue { get }
}

extension String: PostgresBindable {
    public var postgresValue: PostgresValue { .text(self) }
}

extension Int64: PostgresBindable {
    public var postgresValue: PostgresValue { .int(self) }
}

extension Int: PostgresBindable {
    public var postgresValue: PostgresValue { .int(Int64(self)) }
}

extension Bool: PostgresBindable {
    public var postgresValue: PostgresValue { .bool(self) }
}

extension Data: PostgresBindable {
    public var postgresValue: PostgresValue { .bytes(self) }
}

extension Array: PostgresBindable where Element == UInt8 {
    public var postgresValue: PostgresValue { .bytes(Data(self)) }
}

extension UUID: PostgresBindable {
    public var postgresValue: PostgresValue { .text(uuidString.lowercased()) }
}

extension Optional: PostgresBindable where Wrapped: PostgresBindable {
    public var postgresValue: PostgresValue { self?.postgresValue ?? .null }
}

extension PostgresValue: PostgresBindable {
    public var postgresValue: PostgresValue { self }
}
