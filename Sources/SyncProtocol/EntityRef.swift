import Foundation
import NotesModel

/// Names one entity of an account: its kind and id. A note and a folder never
/// share an id in practice, but the pair is the key everywhere.
public struct EntityRef: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var kind: EntityKind
    public var id: UUID

    public init(kind: EntityKind, id: UUID) {
        self.kind = kind
        self.id = id
    }

    public static func note(_ id: NoteID) -> EntityRef { EntityRef(kind: .note, id: id.uuid) }
    public static func folder(_ id: FolderID) -> EntityRef { EntityRef(kind: .folder, id: id.uuid) }

    /// `note:<id>` or `folder:<id>`, with the id in lowercase.
    public var description: String { "\(kind.rawValue):\(UUIDText.format(id))" }

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

    enum CodingKeys: String, CodingKey { case kind, id }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownFields(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(EntityKind.self, forKey: .kind)
        id = try container.decodeUUID(forKey: .id)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeUUID(id, forKey: .id)
    }
}
