import Foundation
import NotesModel
import SyncProtocol

/// An account's key in every server table. Ids are scoped to an account: the
/// same note id in two accounts is two entities.
public struct AccountID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}

/// One entity row as a store keeps it: the latest version of a note or folder,
/// or its tombstone.
public struct StoredEntity: Hashable, Sendable {
    public var ref: EntityRef
    /// The account counter value of the change that made this row.
    public var version: Int64
    /// The change that made this row.
    public var changeId: ChangeID
    public var deleted: Bool
    /// A note's title or a folder's name; empty for a tombstone.
    public var name: String
    /// A note's bytes; empty for folders and tombstones.
    public var body: Data
    /// A note's folder or a folder's parent; nil for the root and tombstones.
    public var parentId: UUID?
    /// When the row was written (server clock), for tombstone retention.
    public var updatedAt: Date
    /// The device that pushed the change; nil when read back without it.
    public var device: DeviceID?

    public init(
        ref: EntityRef, version: Int64, changeId: ChangeID, deleted: Bool, name: String, body: Data,
        parentId: UUID?, updatedAt: Date, device: DeviceID? = nil
    ) {
        self.ref = ref
        self.version = version
        self.changeId = changeId
        self.deleted = deleted
        self.name = name
        self.body = body
        self.parentId = parentId
        self.updatedAt = updatedAt
        self.device = device
    }

    /// The row as it travels.
    public var wire: EntityVersion {
        var entity = EntityVersion(
            kind: ref.kind, id: ref.id, version: version, changeId: changeId, deleted: deleted)
        guard !deleted else { return entity }
        switch ref.kind {
        case .note:
            entity.note = NotePayload(title: name, bodyBytes: body, folderId: parentId.map(FolderID.init))
        case .folder:
            entity.folder = FolderPayload(name: name, parentId: parentId.map(FolderID.init))
        }
        return entity
    }

    /// About how many bytes this row adds to a page.
    public var sizeEstimate: Int { name.utf8.count + body.count + 200 }
}

/// The first answer to a change id, kept so a retry gets it again byte for byte.
public struct IdempotencyRecord: Hashable, Sendable {
    public var changeId: ChangeID
    /// SHA-256 of the change's canonical payload (`PayloadHash`).
    public var payloadHash: [UInt8]
    /// The encoded `ChangeResult`, exactly as first sent.
    public var result: Data
    public var createdAt: Date

    public init(changeId: ChangeID, payloadHash: [UInt8], result: Data, createdAt: Date) {
        self.changeId = changeId
        self.payloadHash = payloadHash
        self.result = result
        self.createdAt = createdAt
    }
}

/// A token as stored: only a hash of its secret.
public struct TokenRecord: Hashable, Sendable {
    public var tokenID: String
    public var account: AccountID
    public var secretHash: [UInt8]
    /// True when the token or its account was revoked.
    public var revoked: Bool

    public init(tokenID: String, account: AccountID, secretHash: [UInt8], revoked: Bool) {
        self.tokenID = tokenID
        self.account = account
        self.secretHash = secretHash
        self.revoked = revoked
    }
}

/// One line of `notesfs account list`.
/// One token of an account, for `notesfs account tokens` (never its secret).
public struct TokenSummary: Hashable, Sendable {
    public var tokenID: String
    public var createdAt: Date
    /// When a request last authenticated with it (recorded at most once a minute), nil if never.
    public var lastUsedAt: Date?
    public var revoked: Bool

    public init(tokenID: String, createdAt: Date, lastUsedAt: Date?, revoked: Bool) {
        self.tokenID = tokenID
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revoked = revoked
    }
}

public struct AccountSummary: Hashable, Sendable {
    public var id: AccountID
    public var name: String
    public var counter: Int64
    public var liveTokens: Int
    public var liveEntities: Int
    public var createdAt: Date
    public var revoked: Bool

    public init(
        id: AccountID, name: String, counter: Int64, liveTokens: Int, liveEntities: Int, createdAt: Date,
        revoked: Bool
    ) {
        self.id = id
        self.name = name
        self.counter = counter
        self.liveTokens = liveTokens
        self.liveEntities = liveEntities
        self.createdAt = createdAt
        self.revoked = revoked
    }
}

/// Where an account's feed stands.
public struct FeedHead: Hashable, Sendable {
    /// The account counter: the newest committed version.
    public var counter: Int64
    /// The newest version of a tombstone removed by retention; a cursor before
    /// it would miss that delete.
    public var purgedThrough: Int64

    public init(counter: Int64, purgedThrough: Int64) {
        self.counter = counter
        self.purgedThrough = purgedThrough
    }
}

/// One read of the change feed, made in one snapshot.
public struct FeedRead: Sendable {
    public var entities: [StoredEntity]
    public var hasMore: Bool
    public var head: FeedHead

    public init(entities: [StoredEntity], hasMore: Bool, head: FeedHead) {
        self.entities = entities
        self.hasMore = hasMore
        self.head = head
    }
}

/// One read of the index of live entities.
public struct IndexRead: Sendable {
    public var entries: [IndexEntry]
    public var hasMore: Bool
    public var head: FeedHead

    public init(entries: [IndexEntry], hasMore: Bool, head: FeedHead) {
        self.entries = entries
        self.hasMore = hasMore
        self.head = head
    }
}

/// One read of chosen entities.
public struct FetchRead: Sendable {
    public var found: [StoredEntity]
    public var notFound: [EntityRef]
    public var omitted: [EntityRef]

    public init(found: [StoredEntity], notFound: [EntityRef], omitted: [EntityRef]) {
        self.found = found
        self.notFound = notFound
        self.omitted = omitted
    }
}

/// What retention removed.
public struct PurgeReport: Hashable, Sendable {
    public var tombstones: Int
    public var changeIds: Int

    public init(tombstones: Int, changeIds: Int) {
        self.tombstones = tombstones
        self.changeIds = changeIds
    }
}
