import Foundation
import NotesModel

/// One note or folder of the tree at a time, without its text: what a
/// listing needs (`GET /v1/history/tree?bodies=false`).
public struct TreeSummaryEntry: Hashable, Sendable, Codable {
    public var kind: EntityKind
    public var id: UUID
    /// The version it had then; a note's text is `GET /v1/history/version` of it.
    public var version: Int64
    public var changeId: ChangeID
    /// When the server applied this version.
    public var time: Date
    /// The device that pushed it; nil for versions stored before the server kept devices.
    public var device: DeviceID?
    /// The note's title or the folder's name.
    public var name: String
    /// The note's folder or the folder's parent; nil in the root.
    public var parentId: UUID?
    /// Exact bytes of the note's body at this version (0 for a folder).
    public var size: Int64

    public init(
        kind: EntityKind, id: UUID, version: Int64, changeId: ChangeID, time: Date, device: DeviceID?, name: String,
        parentId: UUID?, size: Int64
    ) {
        self.kind = kind
        self.id = id
        self.version = version
        self.changeId = changeId
        self.time = time
        self.device = device
        self.name = name
        self.parentId = parentId
        self.size = size
    }

    public var ref: EntityRef { EntityRef(kind: kind, id: id) }

    enum CodingKeys: String, CodingKey { case kind, id, version, changeId, time, device, name, parentId, size }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(EntityKind.self, forKey: .kind)
        id = try container.decodeUUID(forKey: .id)
        version = try container.decode(Int64.self, forKey: .version)
        changeId = try container.decode(ChangeID.self, forKey: .changeId)
        time = try container.decodeWireTime(forKey: .time)
        device = try container.decodeIfPresent(DeviceID.self, forKey: .device)
        name = try container.decode(String.self, forKey: .name)
        parentId = try container.decodeIfPresent(String.self, forKey: .parentId).map { text in
            guard let id = UUIDText.parse(text) else {
                throw DecodingError.dataCorruptedError(forKey: .parentId, in: container, debugDescription: "not a UUID")
            }
            return id
        }
        size = try container.decode(Int64.self, forKey: .size)
        guard size >= 0 else {
            throw DecodingError.dataCorruptedError(forKey: .size, in: container, debugDescription: "a negative size")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeUUID(id, forKey: .id)
        try container.encode(version, forKey: .version)
        try container.encode(changeId, forKey: .changeId)
        try container.encode(WireTime.format(time), forKey: .time)
        try container.encodeIfPresent(device, forKey: .device)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(parentId.map { UUIDText.format($0) }, forKey: .parentId)
        try container.encode(size, forKey: .size)
    }
}

/// `GET /v1/history/tree?bodies=false`: the tree at `at` as `TreePage` has
/// it, in the same order and pages, but each entry without its text, so a
/// page holds up to `ProtocolLimits.indexRowsMax` entries.
public struct TreeSummaryPage: Hashable, Sendable, Codable {
    /// The time asked for.
    public var at: Date
    public var entries: [TreeSummaryEntry]
    /// True when more entities follow; ask again with `after=nextAfter`.
    public var hasMore: Bool
    /// The `after` token of the next page; nil on the last page.
    public var nextAfter: String?
    /// As in `TreePage.keptSince`.
    public var keptSince: Date?
    /// The token's account, as in `ChangesPage.account`.
    public var account: String?

    public init(
        at: Date, entries: [TreeSummaryEntry], hasMore: Bool, nextAfter: String?, keptSince: Date?, account: String?
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
        entries = try container.decode([TreeSummaryEntry].self, forKey: .entries)
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

    /// The JSON `WireCoding.encoder()` makes of this page, written directly.
    public var wireJSON: Data {
        var writer = WireWriter(capacity: 256 + entries.reduce(0) { $0 + $1.name.utf8.count + 300 })
        writer.raw(UInt8(ascii: "{"))
        if let account {
            writer.raw(#""account":"#)
            writer.string(account)
            writer.raw(UInt8(ascii: ","))
        }
        writer.raw(#""at":"#)
        writer.string(WireTime.format(at))
        writer.raw(#","entries":["#)
        for (index, entry) in entries.enumerated() {
            if index > 0 { writer.raw(UInt8(ascii: ",")) }
            writer.treeSummaryEntry(entry)
        }
        writer.raw(#"],"hasMore":"#)
        writer.bool(hasMore)
        if let keptSince {
            writer.raw(#","keptSince":"#)
            writer.string(WireTime.format(keptSince))
        }
        if let nextAfter {
            writer.raw(#","nextAfter":"#)
            writer.string(nextAfter)
        }
        writer.raw(UInt8(ascii: "}"))
        return writer.data
    }
}

extension WireWriter {
    /// An entry of a tree summary, keys in sorted order.
    mutating func treeSummaryEntry(_ entry: TreeSummaryEntry) {
        raw(#"{"changeId":"#)
        uuid(entry.changeId.uuid)
        if let device = entry.device {
            raw(#","device":"#)
            uuid(device.uuid)
        }
        raw(#","id":"#)
        uuid(entry.id)
        raw(#","kind":"#)
        string(entry.kind.rawValue)
        raw(#","name":"#)
        string(entry.name)
        if let parent = entry.parentId {
            raw(#","parentId":"#)
            uuid(parent)
        }
        raw(#","size":"#)
        number(entry.size)
        raw(#","time":"#)
        string(WireTime.format(entry.time))
        raw(#","version":"#)
        number(entry.version)
        raw(UInt8(ascii: "}"))
    }
}
