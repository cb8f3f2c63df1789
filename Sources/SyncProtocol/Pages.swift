import Foundation
import NotesModel

/// `GET /v1/changes`: entities changed after the cursor, oldest first,
/// tombstones included. An entity changed twice appears once, at its latest
/// version.
public struct ChangesPage: Hashable, Sendable, Codable {
    /// At most `pageRowsMax` rows and about `pageBytesMax` bytes; at least one
    /// row unless the feed has nothing after the cursor.
    public var changes: [EntityVersion]
    /// Where the next request starts; store it once the page is applied.
    public var nextCursor: SyncCursor
    /// True when more rows follow at once (ask again without waiting).
    public var hasMore: Bool
    /// The server's epoch; it changes when the server is restored from a backup.
    public var epoch: String
    /// Where this page starts when that is not the request's `since`: a long
    /// poll naming its device moved past that device's own pushes. Nil: at `since`.
    public var from: SyncCursor?
    /// The account the token belongs to, as an opaque key that every token
    /// of the account shares and that differs on another server
    /// installation; clients bind their database to it. Nil from a server
    /// that does not name accounts.
    public var account: String?
    /// How long the server keeps replaced versions (`notesfs serve
    /// --history-days`), in seconds: clients keep their trash as long. Nil
    /// from a server that does not say.
    public var historySeconds: Int64?

    public init(
        changes: [EntityVersion], nextCursor: SyncCursor, hasMore: Bool, epoch: String, from: SyncCursor? = nil,
        account: String? = nil, historySeconds: Int64? = nil
    ) {
        self.changes = changes
        self.nextCursor = nextCursor
        self.hasMore = hasMore
        self.epoch = epoch
        self.from = from
        self.account = account
        self.historySeconds = historySeconds
    }
}

/// One live entity in `GET /v1/index`.
public struct IndexEntry: Hashable, Sendable, Codable {
    public var kind: EntityKind
    public var id: UUID
    public var version: Int64

    public init(kind: EntityKind, id: UUID, version: Int64) {
        self.kind = kind
        self.id = id
        self.version = version
    }

    public var ref: EntityRef { EntityRef(kind: kind, id: id) }

    enum CodingKeys: String, CodingKey { case kind, id, version }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(EntityKind.self, forKey: .kind)
        id = try container.decodeUUID(forKey: .id)
        version = try container.decode(Int64.self, forKey: .version)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeUUID(id, forKey: .id)
        try container.encode(version, forKey: .version)
    }
}

/// `GET /v1/index`: (kind, id, version) of every live entity, ordered by kind
/// then id, for a resync after `410 Gone`.
///
/// Resync: take the `cursor` of the first page, list every page, fetch the
/// entities whose version differs with `/v1/fetch`, apply, then pull the feed
/// from that cursor (rows seen twice are harmless).
public struct IndexPage: Hashable, Sendable, Codable {
    public var entries: [IndexEntry]
    /// True when more entries follow; ask again with `after=nextAfter`.
    public var hasMore: Bool
    /// The `after` token for the next page; nil on the last page.
    public var nextAfter: String?
    /// The feed position when this page was read.
    public var cursor: SyncCursor
    /// The server's epoch.
    public var epoch: String
    /// The token's account, as in `ChangesPage.account`.
    public var account: String?

    public init(
        entries: [IndexEntry], hasMore: Bool, nextAfter: String?, cursor: SyncCursor, epoch: String,
        account: String? = nil
    ) {
        self.entries = entries
        self.hasMore = hasMore
        self.nextAfter = nextAfter
        self.cursor = cursor
        self.epoch = epoch
        self.account = account
    }
}

/// `POST /v1/fetch`: `{ "entities": [EntityRef] }`, at most
/// `ProtocolLimits.fetchEntitiesMax` of them, each at most once.
public struct FetchRequest: Hashable, Sendable, Codable {
    public var entities: [EntityRef]

    public init(entities: [EntityRef]) {
        self.entities = entities
    }

    enum CodingKeys: String, CodingKey { case entities }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownFields(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        entities = try container.decode([EntityRef].self, forKey: .entities)
    }
}

/// The answer to a fetch: the rows asked for (tombstones included), in the
/// order asked, as many as fit in about `pageBytesMax` (at least one).
public struct FetchResponse: Hashable, Sendable, Codable {
    public var entities: [EntityVersion]
    /// Asked for, but the server has no such entity (not even a tombstone).
    public var notFound: [EntityRef]
    /// Left out to bound the answer's size; ask for them again.
    public var omitted: [EntityRef]

    public init(entities: [EntityVersion], notFound: [EntityRef], omitted: [EntityRef]) {
        self.entities = entities
        self.notFound = notFound
        self.omitted = omitted
    }
}
