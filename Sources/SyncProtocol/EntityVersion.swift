import Foundation
import NotesModel

/// One entity as the server holds it: a row of the change feed, a `fetch`
/// answer, or the `current` of a conflict.
///
/// `{ "kind", "id", "version", "changeId", "deleted", "note"? , "folder"? }`.
/// A tombstone has `deleted: true` and no content.
public struct EntityVersion: Hashable, Sendable, Codable {
    public var kind: EntityKind
    public var id: UUID
    /// The account counter value the change that made this row got.
    public var version: Int64
    /// The change that made this version.
    public var changeId: ChangeID
    /// True for a tombstone.
    public var deleted: Bool
    /// The content of a live note.
    public var note: NotePayload?
    /// The content of a live folder.
    public var folder: FolderPayload?

    public init(
        kind: EntityKind, id: UUID, version: Int64, changeId: ChangeID, deleted: Bool,
        note: NotePayload? = nil, folder: FolderPayload? = nil
    ) {
        self.kind = kind
        self.id = id
        self.version = version
        self.changeId = changeId
        self.deleted = deleted
        self.note = note
        self.folder = folder
    }

    public var ref: EntityRef { EntityRef(kind: kind, id: id) }

    /// Payload bytes as sent (title or name plus body in its wire form).
    public var wireByteCount: Int {
        (note.map { $0.title.utf8.count + $0.body.utf8.count } ?? 0) + (folder.map { $0.name.utf8.count } ?? 0)
    }

    enum CodingKeys: String, CodingKey { case kind, id, version, changeId, deleted, note, folder }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(EntityKind.self, forKey: .kind)
        id = try container.decodeUUID(forKey: .id)
        version = try container.decode(Int64.self, forKey: .version)
        changeId = try container.decode(ChangeID.self, forKey: .changeId)
        deleted = try container.decode(Bool.self, forKey: .deleted)
        note = try container.decodeNullable(NotePayload.self, forKey: .note)
        folder = try container.decodeNullable(FolderPayload.self, forKey: .folder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeUUID(id, forKey: .id)
        try container.encode(version, forKey: .version)
        try container.encode(changeId, forKey: .changeId)
        try container.encode(deleted, forKey: .deleted)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encodeIfPresent(folder, forKey: .folder)
    }
}
