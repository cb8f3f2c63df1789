import Foundation
import NotesModel

/// A coding key for any field name, used to list the fields a client sent.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

extension Decoder {
    /// Throws when the JSON object holds a field that is not one of `Keys`, so a
    /// typo in a request (`"baseversion"`) is a 400, not a silently ignored field.
    func rejectUnknownFields<Keys: CodingKey>(_ keys: Keys.Type) throws {
        let container = try container(keyedBy: AnyCodingKey.self)
        for key in container.allKeys where Keys(stringValue: key.stringValue) == nil {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: codingPath + [key],
                    debugDescription: "unknown field '\(key.stringValue.prefix(64))'"))
        }
    }
}

extension KeyedDecodingContainer {
    /// Decodes a lowercase or uppercase UUID string.
    func decodeUUID(forKey key: Key) throws -> UUID {
        let text = try decode(String.self, forKey: key)
        guard let uuid = UUIDText.parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "'\(text.prefix(64))' is not a UUID")
        }
        return uuid
    }

    /// Decodes a whole number that may be missing or null as nil. A number
    /// that is not whole or does not fit 64 bits is reported against its
    /// field (the decoder alone reports it as the whole body being invalid).
    func decodeNullableInt64(forKey key: Key) throws -> Int64? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        do {
            return try decode(Int64.self, forKey: key)
        } catch {
            guard (try? decode(Double.self, forKey: key)) != nil else { throw error }
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "must be a whole number from \(Int64.min) to \(Int64.max)")
        }
    }

    /// Decodes a value that may be missing or null as nil.
    func decodeNullable<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        return try decode(type, forKey: key)
    }
}

extension KeyedEncodingContainer {
    /// Encodes a UUID in the canonical lowercase text form.
    mutating func encodeUUID(_ uuid: UUID, forKey key: Key) throws {
        try encode(UUIDText.format(uuid), forKey: key)
    }

    /// Encodes nil as an explicit JSON null, so the field is always present.
    mutating func encodeNullable<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
