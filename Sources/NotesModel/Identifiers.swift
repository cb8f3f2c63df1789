import Foundation

/// A note's identity, made on the device that created it and never changed.
public struct NoteID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public let uuid: UUID
    public init(_ uuid: UUID) { self.uuid = uuid }
    public init() { self.uuid = TimeOrderedUUID.make() }
    /// Parses the canonical text form; nil when `text` is not a UUID.
    public init?(_ text: String) {
        guard let uuid = UUIDText.parse(text) else { return nil }
        self.uuid = uuid
    }
    public var description: String { UUIDText.format(uuid) }
    public static func < (lhs: Self, rhs: Self) -> Bool { UUIDText.precedes(lhs.uuid, rhs.uuid) }
    public init(from decoder: any Decoder) throws { self.uuid = try UUID(lowercasedFrom: decoder) }
    public func encode(to encoder: any Encoder) throws { try uuid.encodeLowercased(to: encoder) }
    public static func == (lhs: Self, rhs: Self) -> Bool { UUIDText.words(lhs.uuid) == UUIDText.words(rhs.uuid) }
    public func hash(into hasher: inout Hasher) {
        let (high, low) = UUIDText.words(uuid)
        hasher.combine(high)
        hasher.combine(low)
    }
}

/// A folder's identity; see `FolderTree.derivedFolderID` for how local folders get theirs.
public struct FolderID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public let uuid: UUID
    public init(_ uuid: UUID) { self.uuid = uuid }
    public init() { self.uuid = TimeOrderedUUID.make() }
    public init?(_ text: String) {
        guard let uuid = UUIDText.parse(text) else { return nil }
        self.uuid = uuid
    }
    public var description: String { UUIDText.format(uuid) }
    public static func < (lhs: Self, rhs: Self) -> Bool { UUIDText.precedes(lhs.uuid, rhs.uuid) }
    public init(from decoder: any Decoder) throws { self.uuid = try UUID(lowercasedFrom: decoder) }
    public func encode(to encoder: any Encoder) throws { try uuid.encodeLowercased(to: encoder) }
    public static func == (lhs: Self, rhs: Self) -> Bool { UUIDText.words(lhs.uuid) == UUIDText.words(rhs.uuid) }
    public func hash(into hasher: inout Hasher) {
        let (high, low) = UUIDText.words(uuid)
        hasher.combine(high)
        hasher.combine(low)
    }
}

/// The idempotency key of one outbox change; a retry reuses it.
public struct ChangeID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public let uuid: UUID
    public init(_ uuid: UUID) { self.uuid = uuid }
    public init() { self.uuid = TimeOrderedUUID.make() }
    public init?(_ text: String) {
        guard let uuid = UUIDText.parse(text) else { return nil }
        self.uuid = uuid
    }
    public var description: String { UUIDText.format(uuid) }
    public static func < (lhs: Self, rhs: Self) -> Bool { UUIDText.precedes(lhs.uuid, rhs.uuid) }
    public init(from decoder: any Decoder) throws { self.uuid = try UUID(lowercasedFrom: decoder) }
    public func encode(to encoder: any Encoder) throws { try uuid.encodeLowercased(to: encoder) }
}

/// One machine's identity within an account.
public struct DeviceID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public let uuid: UUID
    public init(_ uuid: UUID) { self.uuid = uuid }
    public init() { self.uuid = TimeOrderedUUID.make() }
    public init?(_ text: String) {
        guard let uuid = UUIDText.parse(text) else { return nil }
        self.uuid = uuid
    }
    public var description: String { UUIDText.format(uuid) }
    public static func < (lhs: Self, rhs: Self) -> Bool { UUIDText.precedes(lhs.uuid, rhs.uuid) }
    public init(from decoder: any Decoder) throws { self.uuid = try UUID(lowercasedFrom: decoder) }
    public func encode(to encoder: any Encoder) throws { try uuid.encodeLowercased(to: encoder) }
}

/// Which kind of entity a change or version is about.
public enum EntityKind: String, Sendable, Codable, Hashable, Comparable {
    case note
    case folder

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension UUID {
    init(lowercasedFrom decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let uuid = UUIDText.parse(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text.prefix(64))' is not a UUID")
        }
        self = uuid
    }

    func encodeLowercased(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(UUIDText.format(self))
    }
}
