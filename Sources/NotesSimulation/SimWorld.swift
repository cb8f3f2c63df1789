import Foundation
import NotesModel
import NotesStore
import SQLiteKit
import SyncEngine
import SyncProtocol
import SyncServer
import SyncServerSQLite
import Synchronization

/// One seeded run: a real server on a real SQLite file, real devices, and
/// simulated network, clocks, randomness and scheduling.
///
/// `@unchecked Sendable`: one task drives the world step by step; callbacks
/// from the engine (transport hooks, store observers) run only while that
/// task waits for the engine, so no two pieces of code touch it at once.
public final class SimWorld: @unchecked Sendable {
    public let seed: UInt64
    public let configuration: SimConfiguration
    public let breakage: SimBreakage
    /// Every change the server refused, with the device it refused (the
    /// only refusals a device may settle; `SimWorld+TransportFailures.swift`).
    var refusedByServer = Set<Refusal>()
    let directory: String
    let traceEnabled: Bool
    var random: SimRandom
    let uuids: SimUUIDSource
    let time = SimTime()
    private(set) var traceLines: [String] = []
    var devices: [SimDevice] = []
    var step = 0

    // Server
    let serverPath: String
    let backupPath: String
    var serverStore: SQLiteServerStore
    var server: SyncServer
    let serverConfiguration: SyncServer.Configuration
    var account: AccountID
    var token: String
    var epoch: String
    /// Bumped when the server forgets change ids (purge), so answers are compared within one memory.
    var purgeGeneration = 0
    var hasBackup = false
    /// The answers the server remembered when the operator took the backup: a
    /// restore without new-epoch takes the server's memory back to these.
    var answersAtBackup: [String: [ChangeResult.Outcome]] = [:]

    // Faults
    var faultsEnabled = true
    /// Pushes held up in the network, delivered at a later step.
    var delayedPushes: [(device: Int, request: ServerRequest, push: PushRequest, originals: [ChangeID: ChangeID])] = []
    var faultCounts: [SimFault: Int] = [:]
    var syncRuns = 0
    var operations = 0
    /// Devices that have not resynced since the server was restored.
    var staleAfterRestore = Set<Int>()
    /// Pushes that carried a base version from before a restore (the device had not resynced yet).
    var staleBasePushes = 0
    /// What the server held at the end of one step, to check its history against (SimWorld+Revert.swift).
    var serverMoment: ServerMoment?

    // Text bookkeeping
    var nextToken = 1
    /// Every token ever written.
    var written = Set<Int>()
    /// Tokens a device that saw them removed on purpose.
    var removed = Set<Int>()
    /// Every answer the server gave to each change id: "epoch|generation|id" → answers.
    var answers: [String: [ChangeResult.Outcome]] = [:]
    var violations: [String] = []
    /// Mass deletes made before quiet (SimWorld+MassDelete.swift).
    var massDeletes: [SimMassDelete] = []
    /// Simulated kernels in front of the devices' mounts (SimWorld+Kernel.swift).
    var kernelState = SimKernelState()
    /// The ctimes each device showed (SimWorld+Times.swift).
    var timesState = SimTimesState()
    /// Every device's real `SyncScheduler` on simulated time, in the seeds that run them (SimWorld+Scheduler.swift).
    var schedulers: SimSchedulers?
    /// Bumped by every push the server handles: it wakes parked long polls.
    var serverChanges = 0

    let engineConfiguration: SyncEngine.Configuration

    /// Runs started in this process, for unique directory names.
    private static let runsStarted = Atomic<Int>(0)

    public init(seed: UInt64, breakage: SimBreakage = .none, baseDirectory: String, trace: Bool = false) async throws {
        self.seed = seed
        self.breakage = breakage
        self.traceEnabled = trace
        configuration = SimConfiguration(seed: seed)
        random = SimRandom(seed: seed)
        uuids = SimUUIDSource(seed: seed ^ 0x5EED)
        // Named for this run alone: runs of one seed in parallel tests, or in
        // another process (a long `notesfs-simulate`), never share files.
        let run = Self.runsStarted.add(1, ordering: .relaxed).newValue
        directory = (baseDirectory as NSString).appendingPathComponent(
            "notesfs-sim-\(seed)-\(breakage.rawValue)-\(getpid())-\(run)")
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        serverPath = (directory as NSString).appendingPathComponent("server.sqlite")
        backupPath = (directory as NSString).appendingPathComponent("backup")
        var limits = ProtocolLimits.standard
        limits.noteBytesMax = configuration.serverNoteLimit
        serverConfiguration = SyncServer.Configuration(limits: limits, tombstoneRetentionSeconds: 3_600)
        serverStore = try SQLiteServerStore(path: serverPath, options: .init(readers: 1))
        let time = self.time
        let clock = ServerClock { Date(timeIntervalSince1970: Double(time.now + time.serverJump) / 1e9) }
        server = SyncServer(store: serverStore, configuration: serverConfiguration, clock: clock)
        server.followCommits(of: serverStore)
        let added = try await AccountManager(store: serverStore, clock: clock).add(name: "sim")
        account = added.account
        token = added.token.text
        epoch = try await serverStore.epoch()
        var engine = SyncEngine.Configuration()
        engine.pushBatchChangesMax = configuration.pushBatchMax
        engine.pushBatchBytesMax = configuration.pushBytesMax
        engine.pullPageRowsMax = configuration.pullPageMax
        engine.indexPageRowsMax = configuration.indexPageMax
        engine.fetchBatchMax = configuration.fetchBatchMax
        engine.roundsPerRunMax = 2_000
        engineConfiguration = engine
        for index in 0..<configuration.deviceCount {
            var store = StoreConfiguration()
            store.diskReserveBytes = 0
            store.defaultDeviceName = "dev\(index)"
            let offset = configuration.clockOffsets[index] * 1_000_000_000
            store.clock = StoreClock { time.now + offset }
            let source = SimUUIDSource(seed: seed &* 31 &+ UInt64(index) &+ 17)
            store.newUUID = { source.next() }
            if let chunking = configuration.chunking {
                store.chunkedBodyThresholdBytes = chunking.threshold
                store.bodyChunkBytes = chunking.chunkBytes
            }
            switch breakage {
            case .mergeDropsLocal:
                store.mergeNote = { _, _, remote in (remote, nil) }
            case .mergeKeepsOneOfTwoAppends:
                store.mergeNote = Self.mergeKeepingOneOfTwoAppends
            case .copyPerClash:
                let copyIDs = SimUUIDSource(seed: seed &* 37 &+ UInt64(index) &+ 5)
                store.conflictCopyID = { _, _ in NoteID(copyIDs.next()) }
            case .staleSaveTakesEveryWrite:
                store.staleSaveTakesWrite = { _, _ in true }
            case .atomicSaveIgnoresView:
                store.atomicSavesMergeStaleViews = false
            case .staleWritesIgnoreTheirOffset:
                store.staleWritesFollowTheirOffset = false
            case .positionalWritesJudgedByReads:
                // The mount as it was then: the offset did not tell the store either.
                store.staleWritesFollowTheirOffset = false
            default:
                break
            }
            let device = try SimDevice(
                index: index, path: (directory as NSString).appendingPathComponent("dev\(index).sqlite"),
                configuration: store, engineConfiguration: engine, world: self)
            devices.append(device)
        }
        for device in devices { device.observe(self) }
        self.trace("seed \(seed) breakage=\(breakage.rawValue) \(configuration)")
    }

    /// The `mergeKeepsOneOfTwoAppends` breakage: the real merge, except that
    /// when both sides only appended to the base, the server's side alone is
    /// kept (as a merge that let one insert at a point win would).
    static let mergeKeepingOneOfTwoAppends: NoteMerger = { base, local, remote in
        let merged = NoteMergers.lineMerge(base, local, remote)
        guard let base, let local, let remote, var result = merged.result, merged.conflictCopy == nil,
            local.body.count > base.body.count, remote.body.count > base.body.count,
            local.body.starts(with: base.body), remote.body.starts(with: base.body)
        else { return merged }
        result.body = remote.body
        return (result, nil)
    }

    /// Stops the server's writer thread and removes the run's files.
    public func remove() async {
        await stopSchedulers()
        // A kernel's mount observes its device's store: closing it breaks the
        // cycle that kept every run's databases open.
        closeKernels()
        await serverStore.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Trace and faults

    func trace(_ text: @autoclosure () -> String) {
        guard traceEnabled else { return }
        traceLines.append("[\(step)] \(text())")
    }

    func count(_ fault: SimFault) {
        faultCounts[fault, default: 0] += 1
    }

    func violation(_ text: String) {
        trace("VIOLATION: \(text)")
        violations.append("step \(step): \(text)")
    }

    /// The fault for one request, or nil for a clean delivery.
    func drawFault(device: Int, route: String) -> SimFault? {
        guard faultsEnabled else { return nil }
        if devices[device].offlineUntilStep > step {
            count(.offlineRequest)
            trace("\(devices[device].name) \(route): offline")
            return .offlineRequest
        }
        for kind in SimFault.allCases {
            guard let rate = configuration.requestFaults[kind], random.chance(rate) else { continue }
            count(kind)
            trace("\(devices[device].name) \(route): fault \(kind.rawValue)")
            return kind
        }
        return nil
    }

    // MARK: The run

    /// Runs the seed's steps, heals the network, syncs to quiet and checks every invariant.
    public func run() async -> SimResult {
        do {
            try await startSchedulers()
            let historyStep = Self.historyStep(seed: seed, steps: configuration.steps)
            for current in 0..<configuration.steps {
                step = current
                let seconds = Int64(random.int(1...120))
                if schedulers == nil { time.advance(seconds: seconds) } else { try await passTimeBetweenSteps() }
                if !delayedPushes.isEmpty, random.chance(0.3) { await deliverDelayedPushes() }
                try kernelStep()
                try await performStep()
                try await afterStepWithSchedulers()
                if current == historyStep { try recordServerMoment() }
            }
            step = configuration.steps
            try finishKernelWrites()
            try await quiesce()
            try await checkInvariants()
            if violations.isEmpty { try await checkHistoryAndRevert() }
        } catch {
            violation("the run stopped: \(error)")
        }
        return SimResult(
            seed: seed, breakage: breakage, configuration: configuration, violations: violations,
            faultCounts: faultCounts, syncRuns: syncRuns, operations: operations, staleBasePushes: staleBasePushes,
            trace: traceLines)
    }

    private func performStep() async throws {
        guard let device = random.pick(devices) else { return }
        let roll = random.unit()
        var threshold = 0.0
        func event(_ rate: Double) -> Bool {
            threshold += rate
            return roll < threshold
        }
        if event(configuration.syncRate) {
            try await sync(device)
        } else if event(configuration.crashRate) {
            try await crash(device)
        } else if event(configuration.restartRate) {
            try await restartServer()
        } else if event(configuration.restoreRate) {
            try await backupOrRestoreServer()
        } else if event(configuration.expiryRate) {
            try await expireCursors()
        } else if event(configuration.offlineRate) {
            device.offlineUntilStep = step + random.int(3...40)
            count(.goOffline)
            trace("\(device.name) goes offline until step \(device.offlineUntilStep)")
        } else if event(configuration.twinRate) {
            try makeTwins()
        } else if event(operatorRate) {
            try await performOperatorAction()
        } else if event(configuration.kernelRate) {
            try await kernelOperation(device)
        } else {
            try localOperation(device)
        }
    }

    /// One engine run on `device`; a crash requested by the transport happens when it returns.
    @discardableResult
    func sync(_ device: SimDevice) async throws -> SyncRunOutcome {
        if breakage == .pullOverDirty { try forceApplyPulled(device) }
        device.dirtyTokens = try device.tokensInDirtyNotes()
        syncRuns += 1
        trace("\(device.name) sync starts")
        let outcome = schedulers == nil ? await device.engine.sync() : try await syncNow(device)
        trace("\(device.name) sync ended: \(outcome)")
        if traceEnabled { let notes = try device.describeNotes(); trace("\(device.name) now holds \(notes)") }
        if case .storeFailed(let reason) = outcome {
            violation("\(device.name): the store failed during sync: \(reason)")
        }
        if device.crashPending {
            count(.crashAtRequest)
            trace("\(device.name) crashes during its sync")
            try device.crashAndReopen(engineConfiguration: engineConfiguration, world: self)
        }
        return outcome
    }

    /// A crash between two transactions. Half the time in the middle of a
    /// push done by hand with the engine's own steps: frozen, maybe sent,
    /// maybe partly settled — then the process dies.
    private func crash(_ device: SimDevice) async throws {
        if random.chance(0.5) {
            count(.crashMidPush)
            try await partialPushThenCrash(device)
        } else {
            trace("\(device.name) crashes between transactions")
        }
        try device.crashAndReopen(engineConfiguration: engineConfiguration, world: self)
    }

    private func partialPushThenCrash(_ device: SimDevice) async throws {
        let batch = try await device.store.replica.freezeBatch(
            maxCount: engineConfiguration.pushBatchChangesMax, maxBytes: engineConfiguration.pushBatchBytesMax)
        trace("\(device.name) froze \(batch.count) changes, then ...")
        guard !batch.isEmpty, random.chance(0.7) else { return }
        let deviceID = try device.store.admin.device().id
        let cursor = try device.store.admin.syncState().cursor
        let request = WireMapping.pushRequest(batch, device: deviceID, cursor: cursor)
        let response: PushResponse
        do {
            response = try await device.transport.push(request)
        } catch {
            trace("\(device.name) push failed (\(error)) and the device crashes")
            return
        }

        device.dirtyTokens = try device.tokensInDirtyNotes()
        let settled = random.int(0...response.results.count)
        let answers = response.results.prefix(settled).compactMap { result in
            WireMapping.outcome(result.outcome).map { (result.changeId, $0) }
        }
        // The engine settles a push in one transaction, cursor included; a
        // crash leaves all or none of it. Settling part of it is harsher and
        // still safe, but a version settled without the cursor's epoch is a
        // state the engine cannot reach.
        let cursorToo = settled > 0 || random.chance(0.5)
        try await device.store.replica.settle(
            answers, cursor: cursorToo ? WireMapping.cursorAdvance(after: response, sentWith: cursor) : nil)
        trace("\(device.name) settled \(settled) of \(response.results.count) answers and crashes")
    }

    /// One delivery to the server; push answers are recorded for the
    /// idempotency and refusal invariants.
    func deliver(
        _ request: ServerRequest, push: PushRequest?, device: Int, originals: [ChangeID: ChangeID]
    ) async -> (Int, Data) {
        let before = push.map { serverFoldersBeforePush($0) } ?? nil
        let response = await server.handle(request)
        if push != nil { serverChanges += 1 }
        if let push {
            recordPushAnswer(
                device: device, request: push, status: response.status, body: response.body, foldersBefore: before,
                originals: originals)
        }
        return (response.status, response.body)
    }

    /// Delayed pushes finally reach the server, oldest first; nobody hears the answers.
    func deliverDelayedPushes() async {
        let due = delayedPushes
        delayedPushes = []
        for delayed in due {
            trace("a delayed push from \(devices[delayed.device].name) reaches the server")
            _ = await deliver(delayed.request, push: delayed.push, device: delayed.device, originals: delayed.originals)
        }
    }

    // MARK: Heal and quiesce

    private func quiesce() async throws {
        await deliverDelayedPushes()
        try await maybeMassDelete()
        faultsEnabled = false
        trace("faults stop; every device comes online and syncs to quiet")
        for device in devices {
            device.offlineUntilStep = -1
            if try device.store.admin.massDeleteHold().isHeld { try answerHeldDeletions(device) }
        }
        if schedulers != nil { return try await quiesceWithSchedulers() }
        for round in 0..<12 {
            var allSucceeded = true
            for device in devices {
                let outcome = try await sync(device)
                switch outcome {
                case .succeeded: break
                case .held(let reason):
                    allSucceeded = false
                    trace("\(device.name) holds deletions: \(reason)")
                    try answerHeldDeletions(device)
                default:
                    allSucceeded = false
                    trace("\(device.name) quiet-sync round \(round) failed: \(outcome)")
                }
            }
            if allSucceeded, try isQuiet() { return }
        }
        violation("the devices did not reach quiet in 12 rounds of fault-free syncs")
    }

    func isQuiet() throws -> Bool {
        let server = try serverSnapshot()
        for device in devices {
            if try device.store.admin.status().pendingCount != 0 { return false }
            if try device.snapshot() != server { return false }
        }
        return true
    }
}

/// What one seed did and found.
public struct SimResult: Sendable {
    public var seed: UInt64
    public var breakage: SimBreakage
    public var configuration: SimConfiguration
    public var violations: [String]
    public var faultCounts: [SimFault: Int]
    public var syncRuns: Int
    public var operations: Int
    /// Pushes on a base version from before a server restore (see docs/simulation.md "Known issues").
    public var staleBasePushes: Int = 0
    public var trace: [String]

    public var passed: Bool { violations.isEmpty }
}
