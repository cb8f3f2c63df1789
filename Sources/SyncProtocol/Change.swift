import Foundation
import NotesModel

/// One change pushed by a client:
/// `{ "changeId", "kind", "id", "op", "baseVersion", "note" | "folder" }`.
///
/// A `put` carries exactly the payload of its kind (`note` for a note,
/// `folder` for a folder); a `delete` carries none. The server applies it only
/// when `baseVersion` equals the entity's current version (nil: the entity
/// must not exist yet, not even as a tombstone).
public struct Change: Hashable, Sendable, Codable {
    /// The idempotency key: a retry sends the same id and the same payload.
    public var changeId: ChangeID
    public var kind: EntityKind
    /// The note's or folder's id.
    public var id: UUID
    public var op: ChangeOperation
    /// The server version this change was made on, or nil for a create.
    public var baseVersion: Int64?
    /// The note's new content, for a note `put`.
    public var note: NotePayload?
    /// The folder's new content, for a folder `put`.
    public var folder: FolderPayload?

    public init(
        changeId: ChangeID, kind: EntityKind, id: UUID, op: ChangeOperation, baseVersion: Int64?,
        note: NotePayload? = nil, folder: FolderPayload? = nil
    ) {
        self.changeId = changeId
        self.kind = kind
        self.id = id
        self.op = op
        self.baseVersion = baseVersion
        self.note = note
        self.folder = folder
    }

    /// A put of a note.
    public static func putNote(
        _ id: NoteID, _ payload: NotePayload, baseVersion: Int64?, changeId: ChangeID = ChangeID()
    ) -> Change {
        Change(changeId: changeId, kind: .note, id: id.uuid, op: .put, baseVersion: baseVersion, note: payload)
    }

    /// A put of a folder.
    public static func putFolder(
        _ id: FolderID, _ payload: FolderPayload, baseVersion: Int64?, changeId: ChangeID = ChangeID()
    ) -> Change {
        Change(changeId: changeId, kind: .folder, id: id.uuid, op: .put, baseVersion: baseVersion, folder: payload)
    }

    /// A delete of any entity.
    public static func delete(_ ref: EntityRef, baseVersion: Int64?, changeId: ChangeID = ChangeID()) -> Change {
        Change(changeId: changeId, kind: ref.kind, id: ref.id, op: .delete, baseVersion: baseVersion)
    }

    /// The entity this change is about.
    public var ref: EntityRef { EntityRef(kind: kind, id: id) }

    /// Decoded payload bytes this change carries: title or name plus body.
    public var payloadByteCount: Int {
        (note.map { $0.title.utf8.count + $0.bodyByteCount } ?? 0) + (folder.map { $0.name.utf8.count } ?? 0)
    }

    /// Why this change is not well formed, or nil when it is.
    public var shapeProblem: String? {
        if let baseVersion, baseVersion < 1 { return "baseVersion must be at least 1 or null" }
        switch (op, kind) {
        case (.delete, _):
            if note != nil || folder != nil { return "a delete carries no note or folder" }
        case (.put, .note):
            if note == nil { return "a note put needs a note" }
            if folder != nil { return "a note put carries no folder" }
        case (.put, .folder):
            if folder == nil { return "a folder put needs a folder" }
            if note != nil { return "a folder put carries no note" }
        }
        return nil
    }

    enum CodingKeys: String, CodingKey { case changeId, kind, id, op, baseVersion, note, folder }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownFields(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        changeId = try container.decode(ChangeID.self, forKey: .changeId)
        kind = try container.decode(EntityKind.self, forKey: .kind)
        id = try container.decodeUUID(forKey: .id)
        op = try container.decode(ChangeOperation.self, forKey: .op)
        baseVersion = try container.decodeNullableInt64(forKey: .baseVersion)
        note = try container.decodeNullable(NotePayload.self, forKey: .note)
        folder = try container.decodeNullable(FolderPayload.self, forKey: .folder)
        if let problem = shapeProblem {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: decoder.codingPath, debugDescription: problem))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(changeId, forKey: .changeId)
        try container.encode(kind, forKey: .kind)
        try container.encodeUUID(id, forKey: .id)
        try container.encode(op, forKey: .op)
        try container.encodeNullable(baseVersion, forKey: .baseVersion)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encodeIfPresent(folder, forKey: .folder)
    }
}
