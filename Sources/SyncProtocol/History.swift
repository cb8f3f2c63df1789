import Foundation
import NotesModel

extension KeyedDecodingContainer {
    func decodeWireTime(forKey key: Key) throws -> Date {
        let text = try decode(String.self, forKey: key)
        guard let date = WireTime.parse(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not an RFC 3339 time")
        }
        return date
    }

    func decodeWireTimeIfPresent(forKey key: Key) throws -> Date? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let date = WireTime.parse(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not an RFC 3339 time")
        }
        return date
    }
}

/// One version in `GET /v1/history/versions`: what a list shows, without the text.
public struct VersionSummary: Hashable, Sendable, Codable {
    public var version: Int64
    /// The change that made this version.
    public var changeId: ChangeID
    /// When the server applied it (server clock).
    public var time: Date
    /// The device that pushed it; nil for versions stored before the server kept devices.
    public var device: DeviceID?
    /// That device's latest name, as it last told the server (display text,
    /// never an identity); nil when it never did or the server predates names.
    public var deviceName: String?
    /// True for a tombstone.
    public var deleted: Bool
    /// Bytes of the note's body (0 for folders and tombstones).
    public var size: Int
    /// The note's title or the folder's name; nil for a tombstone.
    public var name: String?
    /// The note's folder or the folder's parent; nil in the root and for a tombstone.
    public var parentId: UUID?

    public init(
        version: Int64, changeId: ChangeID, time: Date, device: DeviceID?, deviceName: String? = nil, deleted: Bool,
        size: Int, name: String?, parentId: UUID?
    ) {
        self.version = version
        self.changeId = changeId
        self.time = time
        self.device = device
        self.deviceName = deviceName
        self.deleted = deleted
        self.size = size
        self.name = name
        self.parentId = parentId
    }

    enum CodingKeys: String, CodingKey { case version, changeId, time, device, deviceName, deleted, size, name, parentId }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int64.self, forKey: .version)
        changeId = try container.decode(ChangeID.self, forKey: .changeId)
        time = try container.decodeWireTime(forKey: .time)
        device = try container.decodeIfPresent(DeviceID.self, forKey: .device)
        deviceName = try container.decodeIfPresent(String.self, forKey: .deviceName)
        deleted = try container.decode(Bool.self, forKey: .deleted)
        size = try container.decode(Int.self, forKey: .size)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        parentId = try container.decodeIfPresent(String.self, forKey: .parentId).map { text in
            guard let id = UUIDText.parse(text) else {
                throw DecodingError.dataCorruptedError(forKey: .parentId, in: container, debugDescription: "not a UUID")
            }
            return id
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(changeId, forKey: .changeId)
        try container.encode(WireTime.format(time), forKey: .time)
        try container.encodeIfPresent(device, forKey: .device)
        try container.encodeIfPresent(deviceName, forKey: .deviceName)
        try container.encode(deleted, forKey: .deleted)
        try container.encode(size, forKey: .size)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(parentId.map { UUIDText.format($0) }, forKey: .parentId)
    }
}

/// `GET /v1/history/versions`: the versions of one note or folder the server
/// keeps, newest first, tombstones included, the current one first of all.
public struct VersionsPage: Hashable, Sendable, Codable {
    public var versions: [VersionSummary]
    /// True when older versions follow; ask again with `before=nextBefore`.
    public var hasMore: Bool
    /// The `before` of the next page; nil on the last page.
    public var nextBefore: Int64?
    /// The time from which the account's history is whole; nil when nothing
    /// was ever left out (see `TreePage.keptSince`).
    public var keptSince: Date?
    /// The token's account, as in `ChangesPage.account`.
    public var account: String?

    public init(versions: [VersionSummary], hasMore: Bool, nextBefore: Int64?, keptSince: Date?, account: String?) {
        self.versions = versions
        self.hasMore = hasMore
        self.nextBefore = nextBefore
        self.keptSince = keptSince
        self.account = account
    }

    enum CodingKeys: String, CodingKey { case versions, hasMore, nextBefore, keptSince, account }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        versions = try container.decode([VersionSummary].self, forKey: .versions)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
        nextBefore = try container.decodeIfPresent(Int64.self, forKey: .nextBefore)
        keptSince = try container.decodeWireTimeIfPresent(forKey: .keptSince)
        account = try container.decodeIfPresent(String.self, forKey: .account)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(versions, forKey: .versions)
        try container.encode(hasMore, forKey: .hasMore)
        try container.encodeIfPresent(nextBefore, forKey: .nextBefore)
        try container.encodeIfPresent(keptSince.map(WireTime.format), forKey: .keptSince)
        try container.encodeIfPresent(account, forKey: .account)
    }
}

/// One note or folder as it was at one version, with its content: the answer
/// of `GET /v1/history/version` and the entries of `GET /v1/history/tree`.
/// A tombstone has `deleted: true` and no content.
public struct HistoricEntity: Hashable, Sendable, Codable {
    public var kind: EntityKind
    public var id: UUID
    public var version: Int64
    public var changeId: ChangeID
    /// When the server applied this version.
    public var time: Date
    /// The device that pushed it; nil for versions stored before the server kept devices.
    public var device: DeviceID?
    public var deleted: Bool
    public var note: NotePayload?
    public var folder: FolderPayload?

    public init(
        kind: EntityKind, id: UUID, version: Int64, changeId: ChangeID, time: Date, device: DeviceID?,
        deleted: Bool, note: NotePayload? = nil, folder: FolderPayload? = nil
    ) {
        self.kind = kind
        self.id = id
        self.version = version
        self.changeId = changeId
        self.time = time
        self.device = device
        self.deleted = deleted
        self.note = note
        self.folder = folder
    }

    public var ref: EntityRef { EntityRef(kind: kind, id: id) }

    enum CodingKeys: String, CodingKey { case kind, id, version, changeId, time, device, deleted, note, folder }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(EntityKind.self, forKey: .kind)
        id = try container.decodeUUID(forKey: .id)
        version = try container.decode(Int64.self, forKey: .version)
        changeId = try container.decode(ChangeID.self, forKey: .changeId)
        time = try container.decodeWireTime(forKey: .time)
        device = try container.decodeIfPresent(DeviceID.self, forKey: .device)
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
        try container.encode(WireTime.format(time), forKey: .time)
        try container.encodeIfPresent(device, forKey: .device)
        try container.encode(deleted, forKey: .deleted)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encodeIfPresent(folder, forKey: .folder)
    }
}

/// `GET /v1/history/version`: one version with its content, or `null` when
/// the server does not keep it (never made, trimmed, or another account's).
public struct VersionResponse: Hashable, Sendable, Codable {
    public var entity: HistoricEntity?
    /// The token's account, as in `ChangesPage.account`.
    public var account: String?

    public init(entity: HistoricEntity?, account: String?) {
        self.entity = entity
        self.account = account
    }

    enum CodingKeys: String, CodingKey { case entity, account }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        entity = try container.decodeNullable(HistoricEntity.self, forKey: .entity)
        account = try container.decodeIfPresent(String.self, forKey: .account)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        // Explicit null: "not kept" is an answer, not a missing field.
        try container.encodeNullable(entity, forKey: .entity)
        try container.encodeIfPresent(account, forKey: .account)
    }
}

/// `GET /v1/history/tree`: every note and folder live at `at`, at the
/// version it had then, with its content, ordered by kind then id.
///
/// A page looks at up to `limit` entities of the account and holds those
/// live at `at` that fit in about `pageBytesMax` (at least one), so a page
/// may hold fewer entries than `limit`, even none, while `hasMore` is true.
public struct TreePage: Hashable, Sendable, Codable {
    /// The time asked for.
    public var at: Date
    public var entries: [HistoricEntity]
    /// True when more entities follow; ask again with `after=nextAfter`.
    public var hasMore: Bool
    /// The `after` token of the next page; nil on the last page.
    public var nextAfter: String?
    /// The earliest time whose tree is whole: versions older than that may
    /// have been trimmed (history period, size budget, tombstone retention,
    /// or a server that kept no history yet). Nil: nothing was ever left out.
    /// A tree before `keptSince` may lack entries.
    public var keptSince: Date?
    /// The token's account, as in `ChangesPage.account`.
    public var account: String?

    public init(
        at: Date, entries: [HistoricEntity], hasMore: Bool, nextAfter: String?, keptSince: Date?, account: String?
    ) {
        self.at = at
        self.entries = entries
        self.hasMore = hasMore
        self.nextAfter = nextAfter
        self.keptSince = keptSince
        self.account = account
    }

    enum CodingKeys: String, CodingKey { case at, entries, hasMore, nextAfter, keptSince, account }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        at = try container.decodeWireTime(forKey: .at)
        entries = try container.decode([HistoricEntity].self, forKey: .entries)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
        nextAfter = try container.decodeIfPresent(String.self, forKey: .nextAfter)
        keptSince = try container.decodeWireTimeIfPresent(forKey: .keptSince)
        account = try container.decodeIfPresent(String.self, forKey: .account)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(WireTime.format(at), forKey: .at)
        try container.encode(entries, forKey: .entries)
        try container.encode(hasMore, forKey: .hasMore)
        try container.encodeIfPresent(nextAfter, forKey: .nextAfter)
        try container.encodeIfPresent(keptSince.map(WireTime.format), forKey: .keptSince)
        try container.encodeIfPresent(account, forKey: .account)
    }
}
