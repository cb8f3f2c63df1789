import Foundation
import NotesModel
import SyncProtocol

/// One version of a note or folder as the history keeps it: a replaced
/// version from the history table, or the entity's current row.
public struct VersionRecord: Hashable, Sendable {
    public var ref: EntityRef
    public var version: Int64
    public var changeId: ChangeID
    public var deleted: Bool
    /// A note's title or a folder's name; empty for a tombstone.
    public var name: String
    /// A note's bytes; empty for folders and tombstones, and in version lists.
    public var body: Data
    /// Bytes of the body as stored (also when `body` was not read).
    public var size: Int
    public var parentId: UUID?
    /// When the server applied the version.
    public var time: Date
    /// The device that pushed it; nil for versions from before devices were kept.
    public var device: DeviceID?

    public init(
        ref: EntityRef, version: Int64, changeId: ChangeID, deleted: Bool, name: String, body: Data, size: Int,
        parentId: UUID?, time: Date, device: DeviceID?
    ) {
        self.ref = ref
        self.version = version
        self.changeId = changeId
        self.deleted = deleted
        self.name = name
        self.body = body
        self.size = size
        self.parentId = parentId
        self.time = time
        self.device = device
    }

    /// The version as a list shows it.
    public var summary: VersionSummary {
        VersionSummary(
            version: version, changeId: changeId, time: time, device: device, deleted: deleted,
            size: deleted ? 0 : size, name: deleted ? nil : name, parentId: deleted ? nil : parentId)
    }

    /// The version with its content, as it travels (the payload as the feed sends it).
    public var wire: HistoricEntity {
        let payload = StoredEntity(
            ref: ref, version: version, changeId: changeId, deleted: deleted, name: name, body: body,
            parentId: parentId, updatedAt: time
        ).wire
        return HistoricEntity(
            kind: ref.kind, id: ref.id, version: version, changeId: changeId, time: time, device: device,
            deleted: deleted, note: payload.note, folder: payload.folder)
    }

    /// About how many bytes this version adds to a page.
    public var sizeEstimate: Int { name.utf8.count + size + 200 }

    /// About how many bytes this version adds to a page, with its body or without.
    public func sizeEstimate(withBody: Bool) -> Int { withBody ? sizeEstimate : name.utf8.count + 300 }

    /// The version as the tree without text lists it (never a tombstone there).
    public var treeSummary: TreeSummaryEntry {
        TreeSummaryEntry(
            kind: ref.kind, id: ref.id, version: version, changeId: changeId, time: time, device: device, name: name,
            parentId: parentId, size: ref.kind == .note ? Int64(size) : 0)
    }
}

/// One page of an entity's versions, newest first.
public struct VersionsRead: Sendable {
    public var versions: [VersionRecord]
    public var hasMore: Bool
    /// The account's history is whole from this time on; nil: always was.
    public var keptSince: Date?

    public init(versions: [VersionRecord], hasMore: Bool, keptSince: Date?) {
        self.versions = versions
        self.hasMore = hasMore
        self.keptSince = keptSince
    }
}

/// One page of the tree as of a time.
public struct TreeRead: Sendable {
    /// The entities live at that time, at the version they had then, in (kind, id) order.
    public var entries: [VersionRecord]
    /// The last entity this page looked at; the next page starts after it.
    public var last: EntityRef?
    public var hasMore: Bool
    /// As in `VersionsRead`.
    public var keptSince: Date?

    public init(entries: [VersionRecord], last: EntityRef?, hasMore: Bool, keptSince: Date?) {
        self.entries = entries
        self.last = last
        self.hasMore = hasMore
        self.keptSince = keptSince
    }
}

/// How much replaced text an account's history may hold. Trimming drops the
/// oldest replaced versions first until the history fits, but never the text
/// a deleted note had when it was deleted (the current version of every
/// entity is not in the history at all).
public struct HistoryBudget: Hashable, Sendable {
    /// A fixed limit per account in bytes (`notesfs serve --history-max-mb`);
    /// nil: `liveMultiple` times the account's live text, at least `floorBytes`.
    public var accountBytesMax: Int64?
    public var liveMultiple: Int64
    public var floorBytes: Int64

    public init(accountBytesMax: Int64? = nil, liveMultiple: Int64 = 4, floorBytes: Int64 = 64 << 20) {
        self.accountBytesMax = accountBytesMax
        self.liveMultiple = liveMultiple
        self.floorBytes = floorBytes
    }

    /// The limit for an account whose live notes and folders hold `liveBytes`.
    public func bytesMax(liveBytes: Int64) -> Int64 {
        if let accountBytesMax { return accountBytesMax }
        let (scaled, overflow) = liveBytes.multipliedReportingOverflow(by: liveMultiple)
        return max(floorBytes, overflow ? Int64.max : scaled)
    }
}

/// What one trimming step removed.
public struct HistoryTrimReport: Hashable, Sendable {
    /// Versions removed.
    public var versions: Int
    /// Bytes of text (titles, names, bodies) they held.
    public var bytes: Int64
    /// True when the account's history is within its period and budget
    /// (or nothing more may be removed); false when another step should run.
    public var done: Bool

    public init(versions: Int = 0, bytes: Int64 = 0, done: Bool = true) {
        self.versions = versions
        self.bytes = bytes
        self.done = done
    }
}
