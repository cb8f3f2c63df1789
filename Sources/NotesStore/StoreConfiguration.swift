import Foundation
import NotesModel

/// Limits and injected sources of nondeterminism for a `NotesStore`.
public struct StoreConfiguration: Sendable {
    /// The largest note body in bytes (the server's limit); writes past it fail.
    public var noteSizeLimitBytes: Int = 16 << 20
    /// A kernel write that takes a note past this size stores its body in
    /// chunks, so later writes cost what they touch (see `NoteChunks`).
    public var chunkedBodyThresholdBytes: Int = 256 << 10
    /// The size of those chunks (only new chunked notes take a new size). 8 KiB
    /// costs the fewest instructions both for 4 KiB writes and for 128 KiB ones.
    public var bodyChunkBytes: Int = 8 << 10
    /// A local-only regular file up to this size keeps its bytes in its
    /// database row: a write is one commit, and an `fsync` syncs only the
    /// log. Past it, the bytes move to a backing file beside the database,
    /// where a write costs its own size (see `LocalFileDirectory`).
    public var localInlineBytesMax: Int = 64 << 10
    /// Writes fail with `diskFull` when the data directory's free space drops below this.
    public var diskReserveBytes: Int64 = 32 << 20
    /// How long replaced bodies stay in the local history.
    public var historyRetentionNanoseconds: Int64 = 7 * 24 * 3_600 * 1_000_000_000
    /// How long deleted notes stay in the trash (the server keeps replaced
    /// versions as long by default).
    public var trashRetentionNanoseconds: Int64 = 30 * 24 * 3_600 * 1_000_000_000
    /// The local history's size cap; the oldest entries go first.
    public var historyMaxBytes: Int64 = 256 << 20
    /// Whether the history is pruned by the store's own background queue
    /// (`.background`) or only when a caller asks (`.manual`, for tests that
    /// count steps).
    public var historyPruning: HistoryPruning = .background
    /// The clock for timestamps and history ages.
    public var clock: StoreClock = .system
    /// The source of new ids (notes, changes, devices); the simulation makes it deterministic.
    public var newUUID: @Sendable () -> UUID = { TimeOrderedUUID.make() }
    /// The three-way note merge used when the server answers a push with a conflict.
    public var mergeNote: NoteMerger = NoteMergers.lineMerge
    /// The id of note's conflict copy from a device: one per note and device
    /// (`ConflictPolicy.conflictCopyID`); the simulation swaps it to show a
    /// copy per clash is caught.
    public var conflictCopyID: @Sendable (_ note: NoteID, _ device: DeviceID) -> NoteID = {
        ConflictPolicy.conflictCopyID(of: $0, device: $1)
    }
    /// Whether a kernel write at `offset` is the next write of a save through
    /// a stale view whose writes so far end at `writtenEnd`: a save writes its
    /// text in order, starting at 0 (`NotesStore.staleSaveTakesWrite`); the
    /// simulation swaps it to show that taking every write is caught.
    public var staleSaveTakesWrite: @Sendable (_ offset: Int, _ writtenEnd: Int) -> Bool = {
        NotesStore.staleSaveTakesWrite(at: $0, writtenEnd: $1)
    }
    /// Whether a rename over a note (an atomic save) of text read through a
    /// stale view is merged with what changed since (`NotesStore.replaceText`);
    /// the simulation turns it off to show that replacing the text is caught.
    public var atomicSavesMergeStaleViews = true
    /// Whether a write at a later offset through a stale view is taken
    /// against the text it ends (`NotesStore.textLearned`); the simulation
    /// turns it off to show that judging it by its view alone is caught.
    public var staleWritesFollowTheirOffset = true
    /// The device name used in conflict-copy titles when none is stored yet.
    public var defaultDeviceName: String = ProcessInfo.processInfo.hostName
    /// Called inside every write transaction, after its changes and before
    /// its commit; nil in normal use. A test seam: the crash test's child
    /// stops there so that its kill lands in the middle of a transaction.
    public var insideWriteTransaction: (@Sendable () -> Void)?

    public init() {}
}

/// Who runs the local history's pruning.
public enum HistoryPruning: Sendable, Equatable {
    case background
    case manual
}

/// Merges a note's base, local and remote states (nil = absent or deleted)
/// into the note's new state and, when the bodies clash, a conflict copy.
public typealias NoteMerger =
    @Sendable (_ base: NoteContent?, _ local: NoteContent?, _ remote: NoteContent?) -> (
        result: NoteContent?, conflictCopy: NoteContent?
    )

/// Built-in merge functions.
public enum NoteMergers {
    /// DESIGN.md's merge: line-level three-way merge of bodies, field rules for
    /// title and folder, edit beats delete, clashes kept as a conflict copy.
    public static let lineMerge: NoteMerger = { base, local, remote in
        let outcome = ConflictPolicy.mergeNote(base: base, local: local, remote: remote)
        return (outcome.result, outcome.conflictCopy)
    }

    /// Never loses text without merging lines: the server's version wins and a
    /// differing local version becomes a conflict copy; edit beats delete.
    public static let keepBoth: NoteMerger = { _, local, remote in
        switch (local, remote) {
        case (nil, nil): return (nil, nil)
        case (let local?, nil): return (local, nil)
        case (nil, let remote?): return (remote, nil)
        case (let local?, let remote?):
            if local == remote { return (remote, nil) }
            if local.body == remote.body { return (remote, nil) }
            return (remote, local)
        }
    }
}
