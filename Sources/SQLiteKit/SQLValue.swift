import Foundation

/// One value as SQLite stores it.
public enum SQLValue: Sendable, Equatable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// A Swift value that can be bound to a statement parameter.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int32: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension UInt32: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension Double: SQLBindable {
    public var sqlValue: SQLValue { .real(self) }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
}

extension Data: SQLBindable {
    public var sqlValue: SQLValue { .blob(self) }
}

extension [UInt8]: SQLBindable {
    public var sqlValue: SQLValue { .blob(Data(self)) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue {
        switch self {
        case .none: .null
        case .some(let wrapped): wrapped.sqlValue
        }
    }
}
