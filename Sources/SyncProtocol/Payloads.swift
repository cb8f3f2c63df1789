import Foundation
import NotesModel

/// A note's synced content on the wire: `{ "title", "body", "folderId", "bodyEncoding"? }`.
public struct NotePayload: Hashable, Sendable, Codable {
    /// The title, which is also the file name shown in the mount.
    public var title: String
    /// The body in its wire form; see `bodyEncoding` and `bodyBytes()`.
    public var body: String
    /// The folder, or nil for the root. It may name a folder the server does
    /// not have; clients then show the note in the root.
    public var folderId: FolderID?
    /// `base64` when `body` is base64; nil (absent) when it is the text itself.
    public var bodyEncoding: BodyEncoding?

    public init(title: String, body: String, folderId: FolderID?, bodyEncoding: BodyEncoding? = nil) {
        self.title = title
        self.body = body
        self.folderId = folderId
        self.bodyEncoding = bodyEncoding
    }

    /// The wire form of a note's bytes, choosing text or base64 (`WireBody.encode`).
    public init(title: String, bodyBytes: Data, folderId: FolderID?) {
        let wire = WireBody.encode(bodyBytes)
        self.init(title: title, body: wire.text, folderId: folderId, bodyEncoding: wire.encoding)
    }

    /// The wire form of `content`.
    public init(_ content: NoteContent) {
        self.init(title: content.title, bodyBytes: content.body, folderId: content.folderID)
    }

    /// The body's bytes; nil when it claims base64 and is not.
    public func bodyBytes() -> Data? { WireBody.decode(body, encoding: bodyEncoding) }

    /// The body's decoded size in bytes, computed without decoding.
    public var bodyByteCount: Int { WireBody.decodedCount(body, encoding: bodyEncoding) }

    /// The model value; nil when the body is not valid base64.
    public func content() -> NoteContent? {
        bodyBytes().map { NoteContent(title: title, body: $0, folderID: folderId) }
    }

    enum CodingKeys: String, CodingKey { case title, body, folderId, bodyEncoding }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownFields(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = try container.decode(String.self, forKey: .title)
        body = try container.decode(String.self, forKey: .body)
        folderId = try container.decodeNullable(FolderID.self, forKey: .folderId)
        bodyEncoding = try container.decodeNullable(BodyEncoding.self, forKey: .bodyEncoding)
        guard bodyEncoding != .base64 || Data(base64Encoded: body) != nil else {
            throw DecodingError.dataCorruptedError(
                forKey: .body, in: container, debugDescription: "body is not valid base64")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(title, forKey: .title)
        try container.encode(body, forKey: .body)
        try container.encodeNullable(folderId, forKey: .folderId)
        try container.encodeIfPresent(bodyEncoding, forKey: .bodyEncoding)
    }
}

/// A folder's synced content on the wire: `{ "name", "parentId" }`.
public struct FolderPayload: Hashable, Sendable, Codable {
    /// The directory name shown in the mount.
    public var name: String
    /// The parent folder, or nil for the root.
    public var parentId: FolderID?

    public init(name: String, parentId: FolderID?) {
        self.name = name
        self.parentId = parentId
    }

    public init(_ content: FolderContent) {
        self.init(name: content.name, parentId: content.parentID)
    }

    public var content: FolderContent { FolderContent(name: name, parentID: parentId) }

    enum CodingKeys: String, CodingKey { case name, parentId }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownFields(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        parentId = try container.decodeNullable(FolderID.self, forKey: .parentId)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encodeNullable(parentId, forKey: .parentId)
    }
}
