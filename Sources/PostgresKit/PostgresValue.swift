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
    /// A one-dimensional array sent in binary: one parameter carries a whole
    /// column for `unnest`, so a statement's text does not grow with its rows.
    case array(PostgresArray)
}

/// A one-dimensional array parameter in PostgreSQL's binary array format
/// (`array_send`), built from typed elements so no value is ever quoted.
public struct PostgresArray: Sendable, Hashable {
    /// The array type's OID (`int8[]` is 1016…), sent as the parameter's type.
    public let arrayType: UInt32
    /// The encoded array: header, then each element's length and bytes.
    public let encoded: Data

    private init(arrayType: UInt32, elementType: UInt32, elements: [Data?]) {
        var data = Data()
        func int32(_ value: Int32) { withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) } }
        int32(elements.isEmpty ? 0 : 1)  // dimensions
        int32(elements.contains(nil) ? 1 : 0)  // has nulls
        int32(Int32(bitPattern: elementType))
        if !elements.isEmpty {
            int32(Int32(elements.count))
            int32(1)  // lower bound
        }
        for element in elements {
            if let element {
                int32(Int32(element.count))
                data.append(element)
            } else {
                int32(-1)
            }
        }
        self.arrayType = arrayType
        self.encoded = data
    }

    /// `int8[]`.
    public static func int64(_ values: [Int64]) -> PostgresArray {
        PostgresArray(
            arrayType: 1016, elementType: 20,
            elements: values.map { value in withUnsafeBytes(of: value.bigEndian) { Data($0) } })
    }

    /// `bool[]`.
    public static func bool(_ values: [Bool]) -> PostgresArray {
        PostgresArray(arrayType: 1000, elementType: 16, elements: values.map { Data([$0 ? 1 : 0]) })
    }

    /// `text[]` (UTF-8).
    public static func text(_ values: [String]) -> PostgresArray {
        PostgresArray(arrayType: 1009, elementType: 25, elements: values.map { Data($0.utf8) })
    }

    /// `bytea[]`.
    public static func bytes(_ values: [Data]) -> PostgresArray {
        PostgresArray(arrayType: 1001, elementType: 17, elements: values)
    }

    /// `uuid[]`; nil elements are SQL NULL.
    public static func uuid(_ values: [UUID?]) -> PostgresArray {
        PostgresArray(
            arrayType: 2951, elementType: 2950,
            elements: values.map { value in value.map { uuid in withUnsafeBytes(of: uuid.uuid) { Data($0) } } })
    }
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
