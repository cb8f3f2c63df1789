import Foundation
import NotesStore
import SyncEngine
import SyncProtocol
import Synchronization

// Every device's real `SyncScheduler` on simulated time (docs/simulation.md
// "The schedulers"). In the seeds that run them, a local edit reaches the
// scheduler as it does on a mount (the store's observer; a close or fsync
// as `fileClosed`), `notesfs sync` is `syncNow`, held deletions are
// answered through `settleHeldDeletions`, and nothing else runs the engine:
// the debounce, the backoff after failures, the long poll (which waits in
// simulated time until the server has a change) and the external-commit
// watch do. At the end the world only lets time pass: the schedulers alone
// must bring every device to quiet.

/// What the seed's schedulers share.
final class SimSchedulers: @unchecked Sendable {
    let hub: SimSchedulerHub
    let configuration: SyncScheduler.Configuration
    var watchdog: Task<Void, Never>?
    /// A scheduler never came back to rest; nothing more is released or stopped.
    var stuck = false
    /// Releases at one simulated instant, to catch a scheduler that spins.
    var releasesThisInstant = 0
    var instant: Int64 = 0

    init(hub: SimSchedulerHub, configuration: SyncScheduler.Configuration) {
        self.hub = hub
        self.configuration = configuration
    }

    /// How many releases at one instant mean a scheduler spins (no real
    /// scheduler needs more than a few per device).
    static let releasesPerInstantMax = 5_000
    /// How long (real time) a release may take before the run is given up.
    static let restWaitSecondsMax = 60
}

/// Jitter for one scheduler, from a seeded stream.
final class SimUnitSource: Sendable {
    private let random: Mutex<SimRandom>

    init(seed: UInt64) { random = Mutex(SimRandom(seed: seed)) }

    func next() -> Double { random.withLock { $0.unit() } }
}

struct SimSchedulerFailure: Error, CustomStringConvertible {
    var description: String
}

extension SimConfiguration {
    /// One seed in three runs the real schedulers, drawn from a stream of its
    /// own so the other seeds replay exactly as before.
    static func runsSchedulers(seed: UInt64) -> Bool {
        var random = SimRandom(seed: seed ^ 0x5C4E_D01E_C10C_4B1D)
        return random.int(1...3) == 1
    }
}

extension SimWorld {
    // MARK: Life cycle

    /// Starts every device's scheduler (each begins with a run), in seeds that run them.
    func startSchedulers() async throws {
        guard configuration.runsSchedulers else { return }
        var draw = SimRandom(seed: seed ^ 0x0C10_C4ED_5EED)
        var scheduler = SyncScheduler.Configuration()
        // The watch for other processes' commits: off, or a tick of 1 or 5 s
        // (each tick is a wake in simulated time).
        scheduler.externalCommitCheckSeconds = [nil, 1.0, 5.0][draw.int(0...2)]
        switch breakage {
        case .debounceNeverFires:
            scheduler.debounceSeconds = 1e7
            scheduler.debounceMaxSeconds = 1e7
            scheduler.syncedEditQuietSeconds = 1e7
        case .backoffNeverRetries:
            scheduler.backoffBaseSeconds = 1e7
            scheduler.backoffCapSeconds = 1e7
        default: break
        }
        let hub = SimSchedulerHub(time: time)
        let schedulers = SimSchedulers(hub: hub, configuration: scheduler)
        schedulers.watchdog = Task.detached {
            // Real time, only to end a run whose scheduler never comes back to rest.
            var watched: (generation: Int, since: ContinuousClock.Instant)?
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let generation = hub.pendingRestWait else {
                    watched = nil
                    continue
                }
                guard let current = watched, current.generation == generation else {
                    watched = (generation, .now)
                    continue
                }
                if ContinuousClock.now - current.since > .seconds(SimSchedulers.restWaitSecondsMax) {
                    hub.abandonRestWait(generation: generation)
                }
            }
        }
        self.schedulers = schedulers
        trace("every device runs its real scheduler (external-commit watch \(scheduler.externalCommitCheckSeconds.map { "every \($0) s" } ?? "off"))")
        try await settleSchedulers()
    }

    /// A device that crashed leaves its scheduler behind; it is stopped and
    /// replaced at the next settle (no waiter of it is released meanwhile).
    func retireScheduler(of device: SimDevice) {
        guard let scheduler = device.scheduler else { return }
        if let owner = device.schedulerOwner { schedulers?.hub.retire(owner) }
        device.retiredSchedulers.append(scheduler)
        device.scheduler = nil
        device.schedulerOwner = nil
    }

    private func startScheduler(_ device: SimDevice, _ schedulers: SimSchedulers) async throws {
        let tasks = schedulers.configuration.externalCommitCheckSeconds == nil ? 2 : 3
        let owner = schedulers.hub.addOwner(tasks: tasks)
        let jitter = SimUnitSource(seed: seed &* 0x9E37 &+ UInt64(device.index) &* 7_919 &+ UInt64(device.crashes))
        let name = device.name
        let scheduler = SyncScheduler(
            engine: device.engine, replica: device.store.replica, transport: device.transport,
            configuration: schedulers.configuration, clock: SimSchedulerClock(hub: schedulers.hub, owner: owner),
            random: { jitter.next() },
            log: { [weak self] line in self?.trace("\(name) scheduler at \(self?.simSeconds ?? ""): \(line)") })
        device.scheduler = scheduler
        device.schedulerOwner = owner
        trace("\(name) scheduler starts at \(simSeconds)")
        await scheduler.start()
        guard await schedulers.hub.waitForRest() else { throw stuck(schedulers, "\(name)'s new scheduler") }
    }

    /// Stops every scheduler (the world's files go next).
    func stopSchedulers() async {
        guard let schedulers else { return }
        schedulers.watchdog?.cancel()
        guard !schedulers.stuck else { return }
        for device in devices {
            retireScheduler(of: device)
            for old in device.retiredSchedulers { await old.stop() }
            device.retiredSchedulers = []
        }
    }

    private func stuck(_ schedulers: SimSchedulers, _ what: String) -> SimSchedulerFailure {
        schedulers.stuck = true
        return SimSchedulerFailure(
            description: "\(what) did not come back to rest within \(SimSchedulers.restWaitSecondsMax) s (real time)")
    }

    // MARK: Letting time pass

    /// Stops the schedulers of crashed devices and starts their new ones,
    /// then releases every waiter that is ready now, one at a time.
    func settleSchedulers() async throws {
        guard let schedulers else { return }
        while true {
            try await replaceSchedulersOfCrashedDevices(schedulers)
            guard let released = await schedulers.hub.releaseOneReady() else { return }
            guard released else { throw stuck(schedulers, "a scheduler") }
            if schedulers.instant != time.now {
                schedulers.instant = time.now
                schedulers.releasesThisInstant = 0
            }
            schedulers.releasesThisInstant += 1
            if schedulers.releasesThisInstant > SimSchedulers.releasesPerInstantMax {
                throw SimSchedulerFailure(
                    description: "a scheduler spins: \(SimSchedulers.releasesPerInstantMax) wakes at one instant")
            }
        }
    }

    private func replaceSchedulersOfCrashedDevices(_ schedulers: SimSchedulers) async throws {
        for device in devices {
            if device.crashPending {
                count(.crashAtRequest)
                trace("\(device.name) crashes during a run or poll of its scheduler")
                try device.crashAndReopen(engineConfiguration: engineConfiguration, world: self)
            }
            for old in device.retiredSchedulers {
                count(.schedulerRun, times: await old.completedRuns)
                await old.stop()
            }
            device.retiredSchedulers = []
            if device.scheduler == nil { try await startScheduler(device, schedulers) }
        }
    }

    /// Lets `seconds` of simulated time pass, waking each waiter at its deadline.
    func passTime(seconds: Double) async throws {
        guard let schedulers else {
            time.advance(seconds: Int64(seconds.rounded(.up)))
            return
        }
        let target = time.now + Int64(seconds * 1e9)
        try await settleSchedulers()
        while let next = schedulers.hub.earliestDeadline, next <= target {
            time.advance(to: next)
            try await settleSchedulers()
        }
        time.advance(to: target)
        try await settleSchedulers()
    }

    /// Steps come closer together than without schedulers, so edits land
    /// within a debounce, during runs and during backoffs.
    func passTimeBetweenSteps() async throws {
        let roll = random.unit()
        let seconds =
            roll < 0.5 ? 0.01 + random.unit() * 0.49 : roll < 0.85 ? 0.5 + random.unit() * 4.5 : 5 + random.unit() * 115
        try await passTime(seconds: seconds)
    }

    /// After each step: the mount may report a close or fsync, and whatever
    /// the step made ready runs.
    func afterStepWithSchedulers() async throws {
        guard schedulers != nil else { return }
        if random.chance(0.5), let device = random.pick(devices), let scheduler = device.scheduler {
            count(.fileClosed)
            trace("\(device.name) a file is closed")
            scheduler.fileClosed()
        }
        try await settleSchedulers()
    }

    /// `notesfs sync` on a mount: the scheduler runs now, outside any backoff.
    func syncNow(_ device: SimDevice) async throws -> SyncRunOutcome {
        try await settleSchedulers()
        guard let scheduler = device.scheduler else { return await device.engine.sync() }
        return await scheduler.syncNow()
    }

    // MARK: Quiet

    /// Faults are off: the world only lets time pass (answering held
    /// deletions as the person would), and the schedulers alone must bring
    /// every device to quiet — failed runs retried, debounced edits sent,
    /// other devices' changes brought by the long poll.
    func quiesceWithSchedulers() async throws {
        trace("the schedulers bring every device to quiet on their own")
        let limitSeconds = 20 * 60
        var waited = 0
        var quiet = false
        while waited < limitSeconds && !quiet {
            try await passTime(seconds: 10)
            waited += 10
            for device in devices where try device.store.admin.massDeleteHold().isHeld {
                try answerHeldDeletions(device)
            }
            quiet = try isQuiet()
        }
        for device in devices {
            if let scheduler = device.scheduler { count(.schedulerRun, times: await scheduler.completedRuns) }
        }
        if quiet {
            trace("quiet after \(waited) s")
            return
        }
        var states: [String] = []
        for device in devices {
            let pending = try device.store.admin.status().pendingCount
            let outcome = await device.scheduler?.lastRunOutcome
            states.append("\(device.name): \(pending) pending, last run \(outcome.map { "\($0)" } ?? "none")")
        }
        violation(
            "the schedulers did not bring the devices to quiet in \(limitSeconds) s of fault-free time: "
                + states.joined(separator: "; "))
    }

    /// Simulated seconds since the run began, for the trace.
    var simSeconds: String { String(format: "%.3f s", Double(time.now - SimTime.start) / 1e9) }

    func count(_ fault: SimFault, times: Int) {
        guard times > 0 else { return }
        faultCounts[fault, default: 0] += times
    }
}

extension SimTransport {
    /// `GET /v1/changes?wait=N` on simulated time: the server is asked with
    /// `wait=0` (each ask may meet a fault); an empty answer parks the poll
    /// until the server has handled a push or the wait is over, then it asks again.
    func longPoll(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
        guard let hub = world.schedulers?.hub, let owner = world.devices[device].schedulerOwner else {
            return try await changes(since: since, limit: limit, waitSeconds: 0)
        }
        let deadline = world.time.now + Int64(waitSeconds) * 1_000_000_000
        while true {
            let mark = world.serverChanges
            let page = try await changes(since: since, limit: limit, waitSeconds: 0)
            if !page.changes.isEmpty || page.hasMore || world.time.now >= deadline { return page }
            do {
                try await hub.park(owner: owner, deadline: deadline, alarm: nil) { [world] in
                    world.serverChanges != mark
                }
            } catch {
                throw .offline("the long poll was cancelled")
            }
            if world.time.now < deadline { world.count(.longPollWake) }
        }
    }
}
