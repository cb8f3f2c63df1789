import Foundation

/// Deliberately broken variants, to show the simulation catches what it should.
public enum SimBreakage: String, Sendable, CaseIterable {
    /// The real code.
    case none
    /// The store's merge keeps only the server's side (`StoreConfiguration.mergeNote`).
    case mergeDropsLocal
    /// Pulled changes are written over dirty local text (a wrapper that force-applies).
    case pullOverDirty
    /// The server forgets change ids: a transport that gives every retry a fresh id.
    case noIdempotency
    /// The engine does not freeze what it sends: an edit typed while the
    /// note's change is in flight counts as sent once the answer comes.
    case forgetsToFreeze
    /// A resync deletes clean notes the server lacks (a server put back in
    /// time), instead of sending them back (SimWorld+Operator.swift).
    case resyncDeletesWhatTheServerLacks
    /// The engine settles a push that failed with a 4xx or a TLS error as
    /// refused (renames the text `(not synced)`), as it once did.
    case failureSettlesAsRefused
    /// The mass-delete guard forgets the deletions it let through, so a
    /// batched `rm -rf` is judged push by push (as it once was).
    case guardCountsPerPush
    /// The mount drops `O_APPEND` from writes: the store writes at the offset
    /// the kernel computed from the size it cached.
    case appendAtKernelOffset
    /// The mount hands the store no kernel view: writes and truncations
    /// apply at the kernel's offsets, whatever was pulled since.
    case ignoreKernelView
    /// The mount judges a write at an offset past 0 by the oldest read of
    /// the file as well, as it once did: another program's earlier read
    /// decides which text this writer's bytes are spliced into (SimKernel+SystemCalls.swift).
    case positionalWritesJudgedByReads
    /// The mount serves a read through a stale kernel view from the note's
    /// current text, which the kernel cuts at the old size it still holds: a
    /// program reads a text that never existed (SimKernel.swift).
    case readsIgnoreKernelView
    /// A save through a stale view takes every kernel write within its
    /// second, wherever it falls (`StoreConfiguration.staleSaveTakesWrite`):
    /// another program's line at the merged text's end is spliced into the
    /// saving program's own text, as it once was.
    case staleSaveTakesEveryWrite
    /// A rename over a note replaces its text as it is, whatever view its
    /// program read it through (`StoreConfiguration.atomicSavesMergeStaleViews`):
    /// an editor's atomic save drops lines pulled after it read, as it once did.
    case atomicSaveIgnoresView
    /// A write at a later offset through a stale view is spliced into the
    /// text as of its view, whatever size its program learned since
    /// (`StoreConfiguration.staleWritesFollowTheirOffset` off), as it once was.
    case staleWritesIgnoreTheirOffset
    /// The scheduler's debounce never ends: a local change starts no run by
    /// itself (SimWorld+Scheduler.swift).
    case debounceNeverFires
    /// The scheduler never retries a failed run by itself (SimWorld+Scheduler.swift).
    case backoffNeverRetries
    /// A large note's chunks outlive a writer that sets its body whole (a
    /// pull, a merge, an edit): the store's `notes_unchunk` trigger is gone,
    /// so the mount keeps showing the old chunks (SimDevice.swift).
    case chunksOutliveWholeWrites
    /// The store keeps no ctime of its own: after a touch its times are
    /// dropped, so the ctime follows the mtime back (SimWorld+Times.swift).
    case ctimeFollowsMtime
    /// The merge keeps only the server's lines when both sides appended
    /// (`StoreConfiguration.mergeNote`): inserts at one point are not both kept.
    case mergeKeepsOneOfTwoAppends
    /// Every clash makes a conflict copy of its own, as before copies were one
    /// per note and device (`StoreConfiguration.conflictCopyID`).
    case copyPerClash
}

/// Fault kinds, counted per run.
public enum SimFault: String, Sendable, CaseIterable, Comparable {
    case loseRequest = "lost-request"
    case loseReply = "lost-reply"
    case duplicate = "duplicated"
    case lateReply = "delayed-request"
    case serverError = "server-error"
    case malformedReply = "malformed-reply"
    case offlineRequest = "offline-request"
    case crashAtRequest = "crash-at-request"
    case crashMidPush = "crash-mid-push"
    case crashMidSave = "crash-mid-save"
    case serverRestart = "server-restart"
    case serverRestore = "server-restore-new-epoch"
    case cursorExpiry = "cursor-expiry"
    case goOffline = "long-offline"
    case editInFlight = "edit-in-flight"
    case oversizedNote = "oversized-note"
    case twins = "same-title-twins"
    case restoreWithoutEpoch = "server-restore-without-new-epoch"
    case freshServer = "fresh-server"
    case rebind = "rebind"
    case connectionReset = "connection-reset"
    case tlsFailure = "tls-failure"
    case unauthorized = "http-401"
    case forbidden = "http-403"
    case notFound = "http-404"
    case badGateway = "http-502"
    case cutReply = "cut-reply"
    case kernelAppend = "kernel-append"
    case kernelLateWrite = "kernel-write-at-remembered-end"
    case kernelRewrite = "kernel-truncate-and-rewrite"
    case kernelReplyOvertaken = "kernel-reply-overtaken"
    // Not faults: what the real schedulers did, in the seeds that run them.
    case schedulerRun = "scheduler-run"
    case longPollWake = "long-poll-wake"
    case fileClosed = "file-closed"

    public static func < (lhs: SimFault, rhs: SimFault) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One run's configuration, drawn from its seed (swarm style: whole fault
/// kinds are switched off in some runs, so rarer interleavings get room).
public struct SimConfiguration: Sendable, CustomStringConvertible {
    public var deviceCount: Int
    public var steps: Int
    /// Per-request fault probabilities.
    public var requestFaults: [SimFault: Double]
    /// Per-step probabilities of world events.
    public var crashRate: Double
    public var restartRate: Double
    public var restoreRate: Double
    public var expiryRate: Double
    public var offlineRate: Double
    public var inFlightEditRate: Double
    public var syncRate: Double
    public var oversizeRate: Double
    public var twinRate: Double
    public var folderOpRate: Double
    public var savePatternRate: Double
    /// Device clock offsets in seconds (wrong clocks).
    public var clockOffsets: [Int64]
    public var serverNoteLimit: Int
    public var pushBatchMax: Int
    public var pushBytesMax: Int
    public var pullPageMax: Int
    public var indexPageMax: Int
    public var fetchBatchMax: Int
    /// Per-step probability of a program writing through the simulated kernel (docs/simulation.md).
    public var kernelRate: Double
    /// The kernel sends open and release (`NOTESFS_OPEN_REQUESTS=1`) instead of skipping them.
    public var kernelOpenRequests: Bool
    /// Every device runs its real `SyncScheduler` on simulated time (SimWorld+Scheduler.swift).
    public var runsSchedulers: Bool
    /// Notes written past this many bytes keep their bodies in chunks of
    /// `bodyChunkBytes` (nil: the store's defaults, which no simulated note reaches).
    public var chunking: (threshold: Int, chunkBytes: Int)?

    public init(seed: UInt64) {
        var random = SimRandom(seed: seed ^ 0xC0FF_EE00_D15E_A5E5)
        func rate(_ max: Double, enabledOneIn: Int = 2) -> Double {
            random.int(1...enabledOneIn) == 1 ? random.unit() * max : 0
        }
        deviceCount = random.int(2...5)
        steps = random.int(30...110)
        var faults: [SimFault: Double] = [:]
        for kind in [SimFault.loseRequest, .loseReply, .duplicate, .lateReply, .serverError, .malformedReply] {
            faults[kind] = rate(0.12)
        }
        faults[.crashAtRequest] = rate(0.05, enabledOneIn: 3)
        // Drawn from their own stream, so every other setting of a seed stays as it was.
        faults.merge(Self.transportFailureRates(seed: seed)) { earlier, _ in earlier }
        requestFaults = faults
        crashRate = rate(0.05, enabledOneIn: 3)
        restartRate = rate(0.04, enabledOneIn: 3)
        restoreRate = rate(0.03, enabledOneIn: 4)
        expiryRate = rate(0.03, enabledOneIn: 3)
        offlineRate = rate(0.06)
        inFlightEditRate = rate(0.4)
        syncRate = 0.15 + random.unit() * 0.35
        oversizeRate = rate(0.04, enabledOneIn: 3)
        twinRate = rate(0.06)
        folderOpRate = random.unit() * 0.3
        savePatternRate = random.unit()
        clockOffsets = (0..<deviceCount).map { _ in
            random.int(1...3) == 1 ? Int64(random.int(-5 * 86_400...5 * 86_400)) : 0
        }
        serverNoteLimit = random.int(700...4_000)
        pushBatchMax = random.pick([1, 2, 3, 5, 100]) ?? 100
        pushBytesMax = random.pick([900, 5_000, 4 << 20]) ?? (4 << 20)
        pullPageMax = random.pick([1, 2, 3, 7, 200]) ?? 200
        indexPageMax = random.pick([1, 2, 5, 1_000]) ?? 1_000
        fetchBatchMax = random.pick([1, 3, 200]) ?? 200
        // From a generator of its own, so every other choice above stays what it was.
        var kernelRandom = SimRandom(seed: seed ^ 0x4B45_524E_454C_5F31)
        kernelRate = kernelRandom.int(1...4) == 1 ? 0 : 0.02 + kernelRandom.unit() * 0.13
        kernelOpenRequests = kernelRandom.int(1...3) == 1
        runsSchedulers = Self.runsSchedulers(seed: seed)
        var chunkRandom = SimRandom(seed: seed ^ 0x4348_554E_4B53_5F31)
        chunking = chunkRandom.int(1...2) == 1 ? (chunkRandom.int(8...200), chunkRandom.int(3...40)) : nil
    }

    public var description: String {
        let faults = requestFaults.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { "\($0.key.rawValue)=\(String(format: "%.2f", $0.value))" }.joined(separator: " ")
        return "devices=\(deviceCount) steps=\(steps) sync=\(String(format: "%.2f", syncRate)) "
            + "crash=\(String(format: "%.3f", crashRate)) restart=\(String(format: "%.3f", restartRate)) "
            + "restore=\(String(format: "%.3f", restoreRate)) expiry=\(String(format: "%.3f", expiryRate)) "
            + "offline=\(String(format: "%.3f", offlineRate)) inflight=\(String(format: "%.2f", inFlightEditRate)) "
            + "oversize=\(String(format: "%.3f", oversizeRate)) twins=\(String(format: "%.3f", twinRate)) "
            + "clocks=\(clockOffsets) noteLimit=\(serverNoteLimit) push=\(pushBatchMax)/\(pushBytesMax) "
            + "page=\(pullPageMax) index=\(indexPageMax) fetch=\(fetchBatchMax) "
            + "kernel=\(String(format: "%.3f", kernelRate))\(kernelOpenRequests ? "+opens" : "")"
            + (chunking.map { " chunks=\($0.chunkBytes)>\($0.threshold)" } ?? "")
            + (runsSchedulers ? " schedulers" : "") + " faults[\(faults)]"
    }
}
