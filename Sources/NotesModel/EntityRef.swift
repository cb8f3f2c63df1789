import Foundation

/// Names one synced entity: its kind and id. A note and a folder never share
/// an id in practice, but the pair is the key everywhere an entity of either
/// kind is meant (the outbox, pulled pages, a resync's index, the server).
public struct EntityRef: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var kind: EntityKind
    public var id: UUID

    public init(kind: EntityKind, id: UUID) {
        self.kind = kind
        self.id = id
    }

    public static func note(_ id: NoteID) -> EntityRef { EntityRef(kind: .note, id: id.uuid) }
    public static func folder(_ id: FolderID) -> EntityRef { EntityRef(kind: .folder, id: id.uuid) }

    /// The note this names; nil for a folder.
    public var noteID: NoteID? { kind == .note ? NoteID(id) : nil }
    /// The folder this names; nil for a note.
    public var folderID: FolderID? { kind == .folder ? FolderID(id) : nil }

    /// The id in its canonical lowercase text form.
    public var idText: String { UUIDText.format(id) }

    /// `note:<id>` or `folder:<id>`, with the id in lowercase.
    public var description: String { "\(kind.rawValue):\(idText)" }

    /// Parses `description`; nil for anything else.
    public init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":"),
            let kind = EntityKind(rawValue: String(text[..<colon])),
            let id = UUIDText.parse(String(text[text.index(after: colon)...]))
        else { return nil }
        self.init(kind: kind, id: id)
    }

    /// Ordered by kind, then by the lowercase id text: the lock order of DESIGN.md.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        if lhs.kind != rhs.kind { return lhs.kind < rhs.kind }
        return UUIDText.precedes(lhs.id, rhs.id)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.kind == rhs.kind && UUIDText.words(lhs.id) == UUIDText.words(rhs.id)
    }

    public func hash(into hasher: inout Hasher) {
        let (high, low) = UUIDText.words(id)
        hasher.combine(kind)
        hasher.combine(high)
        hasher.combine(low)
    }

    enum CodingKeys: String, CodingKey { case kind, id }

    /// Reads `{ "kind", "id" }`; any other field is an error, so a typo in a
    /// request is refused rather than ignored.
    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyFieldKey.self)
        if let unknown = fields.allKeys.first(where: { CodingKeys(stringValue: $0.stringValue) == nil }) {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath + [unknown],
                    debugDescription: "unknown field '\(unknown.stringValue.prefix(64))'"))
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(EntityKind.self, forKey: .kind)
        let text = try container.decode(String.self, forKey: .id)
        guard let id = UUIDText.parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: .id, in: container, debugDescription: "'\(text.prefix(64))' is not a UUID")
        }
        self.id = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(idText, forKey: .id)
    }
}

/// Any field name of a JSON object, to find the ones a type does not know.
private struct AnyFieldKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
