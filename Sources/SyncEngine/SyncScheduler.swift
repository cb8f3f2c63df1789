import Foundation
import NotesStore
import SyncProtocol
import Synchronization

/// Decides when the engine runs (DESIGN.md "Sync engine rules"): at start; a
/// local change after a short debounce (at once when an edited note the server
/// already has is closed or fsynced); when the long poll sees a change or the
/// network comes back; when the user asks (`notesfs sync`). Failed runs back
/// off exponentially with jitter. The long poll is its own task that only
/// triggers runs, so a save never waits behind it.
///
/// Every wait goes through the injected `SchedulerClock` (the loop sleeps
/// until the next run is due or its alarm rings), so a simulated clock
/// controls all of it: the seeded simulation runs this type for real. The
/// actor owns its state: other threads report through `SchedulerIntake`, and
/// status reads the one snapshot the actor publishes.
public actor SyncScheduler {
    public struct Configuration: Sendable {
        /// A stream of writes becomes one push this long after the last write…
        public var debounceSeconds = 0.25
        /// …but no later than this after the first one (continuous typing still syncs).
        public var debounceMaxSeconds = 2.0
        /// Edits of notes the server already has go out after this much quiet,
        /// even when no close or fsync is reported (the mount answers most
        /// files without open/release requests, so the kernel reports no close).
        public var syncedEditQuietSeconds = 0.05
        /// How long the long poll holds `GET /v1/changes` open.
        public var longPollWaitSeconds = 30
        public var backoffBaseSeconds = 1.0
        public var backoffCapSeconds = 300.0
        /// The long poll's own backoff cap while the server cannot be reached.
        public var pollBackoffCapSeconds = 30.0
        /// How often the store is asked whether another process committed
        /// (`SyncScheduler+ExternalCommits.swift`); nil turns the watch off.
        public var externalCommitCheckSeconds: Double? = 0.5
        public init() {}
    }

    /// What a run has done so far, for progress lines (`notesfs sync --wait`, status).
    public struct Progress: Sendable, Equatable {
        public var running = false
        public var pulled = 0
        public var pushed = 0
        public var elapsedSeconds = 0.0
        /// Notes still to come, as far as the server's change counter tells (nil = unknown).
        public var remainingEstimate: Int?

        public init(
            running: Bool = false, pulled: Int = 0, pushed: Int = 0, elapsedSeconds: Double = 0,
            remainingEstimate: Int? = nil
        ) {
            self.running = running
            self.pulled = pulled
            self.pushed = pushed
            self.elapsedSeconds = elapsedSeconds
            self.remainingEstimate = remainingEstimate
        }

        /// What status shows of this progress: a run that has gone on for
        /// over a second (shorter ones would only flicker), and `retry`.
        public func live(retry: String?) -> LiveSync {
            guard running && elapsedSeconds > 1 else { return LiveSync(running: false, retry: retry) }
            return LiveSync(
                running: true, received: pulled, sent: pushed, expectedTotal: remainingEstimate.map { pulled + $0 },
                elapsedSeconds: elapsedSeconds, retry: retry)
        }

        /// `Syncing: 3200 of ~10000 notes, 1450/s, about 5 s left`.
        public var line: String {
            var text = "Syncing: \(pulled)"
            if let remaining = remainingEstimate { text += " of ~\(pulled + remaining)" }
            text += " notes received, \(pushed) sent"
            let rate = elapsedSeconds > 0.2 ? Double(pulled + pushed) / elapsedSeconds : 0
            if rate >= 1 { text += ", \(Int(rate))/s" }
            if let remaining = remainingEstimate, rate >= 1, pulled > 0 {
                text += ", about \(Int((Double(remaining) / max(1, Double(pulled) / elapsedSeconds)).rounded(.up))) s left"
            }
            return text
        }
    }

    let engine: SyncEngine
    let replica: SyncReplica
    let transport: any SyncTransport
    let configuration: Configuration
    let clock: any SchedulerClock
    let random: @Sendable () -> Double
    let log: @Sendable (String) -> Void

    /// A run going on: its start and the server's head.
    private struct RunInfo: Sendable {
        var started: Double
        var head: Int64?
    }

    /// What status shows of the scheduler, as one value.
    private struct StatusSnapshot: Sendable {
        /// The next retry while backing off, or why sync stays off.
        var retryLine: String?
        /// The run going on, if any…
        var run: RunInfo?
        /// …else the last run's final progress.
        var lastProgress = Progress()
    }

    /// Where local changes, closes and run requests arrive from other
    /// threads; the loop sleeps on its alarm and takes them in.
    private let intake = SchedulerIntake()
    /// What the loop has heard of and not yet run.
    private var pending = PendingWork()
    /// Rung at the end of every run; the long poll sleeps on it.
    let runEnded = SchedulerAlarm()
    /// The actor's own status, published through `publishedStatus`.
    private var status = StatusSnapshot()
    /// The one lock beside the intake, and the one exception to "the actor
    /// owns its state": status is read synchronously by FUSE worker threads
    /// and the control socket, which cannot await an actor that a run may
    /// hold for minutes. It is a read-only publication: only `updateStatus`
    /// (inside the actor) writes it, replacing the whole value; readers copy it.
    private let publishedStatus = Mutex(StatusSnapshot())

    var backoff: Backoff
    var retryAt: Double?
    var lastOutcome: SyncRunOutcome?
    private var runsCompleted = 0
    /// The hold last written to the log, so each run while held does not repeat it.
    private var lastHoldLogged: String?
    /// The last run was blocked (another account's token): only a run asked
    /// for (`notesfs sync`) checks again; local changes and the long poll wait.
    var blocked = false
    /// The block last written to the log.
    private var lastBlockLogged: String?
    private var loopTask: Task<Void, Never>?
    private var pollTask: Task<Void, Never>?
    private var externalCommitTask: Task<Void, Never>?
    private var observerID: Int?
    var stopped = false

    /// `random` returns numbers in `0..<1` (jitter); `log` gets one line per
    /// notable event and never note text or the token.
    public init(
        engine: SyncEngine, replica: SyncReplica, transport: any SyncTransport,
        configuration: Configuration = Configuration(), clock: any SchedulerClock = SystemSchedulerClock(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.engine = engine
        self.replica = replica
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.random = random
        self.log = log
        backoff = Backoff(baseSeconds: configuration.backoffBaseSeconds, capSeconds: configuration.backoffCapSeconds)
    }

    // MARK: Life cycle

    /// Starts the loop (with a first run at once), the store observer and the long poll.
    public func start() {
        guard loopTask == nil, !stopped else { return }
        observerID = replica.addObserver { [weak self] commit in
            self?.noticed(commit)
        }
        pending.runNow = true
        loopTask = Task { await self.loop() }
        pollTask = Task { await self.pollLoop() }
        if let interval = configuration.externalCommitCheckSeconds {
            externalCommitTask = Task { await self.watchExternalCommits(everySeconds: interval) }
        }
    }

    /// Stops every task; a run in progress finishes its current request first.
    public func stop() async {
        stopped = true
        if let observerID { replica.removeObserver(observerID) }
        observerID = nil
        pollTask?.cancel()
        externalCommitTask?.cancel()
        loopTask?.cancel()
        // The long poll may sit in a 30 s request; it ends on its own.
        _ = await loopTask?.value
    }

    // MARK: Triggers (callable from any thread)

    // Each hands the report to the intake and returns: it never waits for
    // the actor, and the loop takes the report in when it wakes.

    /// The store observer: local edits wake the push after the debounce.
    public nonisolated func noticed(_ commit: StoreCommit) {
        guard commit.origin == .local, commit.outboxChanged else { return }
        intake.localChange(at: clock.now(), syncedEdit: commit.touchedSyncedNote)
    }

    /// A file of the mount was closed or fsynced: an edit of a note the server
    /// already has goes out at once.
    public nonisolated func fileClosed() {
        intake.fileClosed()
    }

    /// Runs as soon as possible (outside any backoff).
    public nonisolated func requestRun() {
        intake.requestRun()
    }

    /// `notesfs sync`: runs now (joining a run in progress) and returns how it ended.
    public func syncNow(withProgress: Bool = false) async -> SyncRunOutcome {
        let outcome = await run(estimateTotal: withProgress)
        // The loop may sleep towards a time this run changed (a retry it set or cleared).
        intake.alarm.ring()
        return outcome
    }

    /// What to do with the deletions the mass-delete guard holds.
    public enum HeldDeletionsAction: Sendable {
        /// `notesfs sync --allow-mass-delete`: let them go, both ways.
        case allow
        /// `notesfs sync --restore-held`: cancel them; the notes come back everywhere.
        case restore
    }

    /// Confirms or cancels the held deletions in the store and asks for a run
    /// (which sends what that queued); returns a line for the user.
    public nonisolated func settleHeldDeletions(_ action: HeldDeletionsAction) throws(StoreError) -> String {
        let summary: String
        switch action {
        case .allow: summary = try replica.confirmMassDelete().summary
        case .restore: summary = try replica.restoreHeldDeletions().summary
        }
        log("sync: \(summary)")
        requestRun()
        return summary
    }

    // MARK: Reading the state (any thread)

    /// What `.notesfs/status` and `notesfs status` show of this scheduler: a
    /// run that has gone on for over a second (shorter ones would only
    /// flicker), with its progress, and the next retry while backing off.
    public nonisolated var live: LiveSync {
        let status = publishedStatus.withLock { $0 }
        return progress(in: status).live(retry: status.retryLine)
    }

    /// The current run's progress (the last run's, not running, between runs),
    /// worked out when asked, so no task refreshes it while a run goes on.
    public nonisolated var progress: Progress { progress(in: publishedStatus.withLock { $0 }) }

    private nonisolated func progress(in status: StatusSnapshot) -> Progress {
        guard let run = status.run else { return status.lastProgress }
        return progress(of: run)
    }

    private nonisolated func progress(of run: RunInfo) -> Progress {
        let engineProgress = engine.progress
        let counter = (try? replica.syncState().cursor).flatMap { SyncCursor(rawValue: $0).counter }
        var progress = Progress(running: true)
        progress.pulled = engineProgress.pulled
        progress.pushed = engineProgress.pushed
        progress.elapsedSeconds = clock.now() - run.started
        if let head = run.head { progress.remainingEstimate = max(0, Int(head - (counter ?? 0))) }
        return progress
    }

    public var completedRuns: Int { runsCompleted }
    public var lastRunOutcome: SyncRunOutcome? { lastOutcome }

    // MARK: The loop

    /// Takes in what was reported, runs whatever is due, then sleeps until
    /// the next thing is due or the intake's alarm says something was reported.
    private func loop() async {
        while !stopped && !Task.isCancelled {
            pending.absorb(intake.take())
            let now = clock.now()
            let due = dueTime(now: now)
            if let due, due <= now {
                // Reports that arrive from here on wait in the intake for the next turn.
                pending = PendingWork()
                retryAt = nil
                _ = await run(estimateTotal: false)
                continue
            }
            do {
                try await clock.sleep(until: due, orUntil: intake.alarm)
            } catch {
                return
            }
        }
    }

    /// When the next run is due, or nil when nothing waits.
    private func dueTime(now: Double) -> Double? {
        let state = pending
        if blocked && !state.runNow { return nil }
        var due: Double?
        if state.runNow {
            due = now
        } else if let last = state.localChangeAt, let first = state.firstLocalChangeAt {
            if state.closedAfterSyncedEdit && !state.otherChangePending {
                due = now
            } else if state.syncedEditPending && !state.otherChangePending {
                due = min(first + configuration.debounceMaxSeconds, last + configuration.syncedEditQuietSeconds)
            } else {
                due = min(first + configuration.debounceMaxSeconds, last + configuration.debounceSeconds)
            }
        }
        if let retryAt {
            // Backing off: local work waits for the retry; the retry itself is due then.
            return max(due ?? retryAt, retryAt)
        }
        return due
    }

    /// One engine run with bookkeeping: backoff, progress, status line.
    private func run(estimateTotal: Bool) async -> SyncRunOutcome {
        let started = clock.now()
        let startCounter = (try? await replica.syncState().cursor).flatMap { SyncCursor(rawValue: $0).counter }
        var head: Int64?
        if estimateTotal || startCounter == nil {
            // A first sync (or a user watching): one small request for the server's head.
            head = try? await transport.index(after: nil, limit: 1).cursor.counter
        }
        let info = RunInfo(started: started, head: head)
        updateStatus { $0.run = info }
        let outcome = await engine.sync()
        var final = progress(of: info)
        final.running = false
        updateStatus { status in
            status.lastProgress = final
            status.run = nil
        }
        runsCompleted += 1
        lastOutcome = outcome
        defer { runEnded.ring() }
        if case .blocked = outcome {} else {
            blocked = false
            lastBlockLogged = nil
        }
        switch outcome {
        case .succeeded:
            lastHoldLogged = nil
            if backoff.failures > 0 { log("sync: working again after \(backoff.failures) failed runs") }
            backoff.succeeded()
            retryAt = nil
            updateStatus { $0.retryLine = nil }
        case .failed(let error):
            scheduleRetry { delay in
                ("sync failed: \(error); next try in \(Int(delay.rounded())) s",
                 "Next sync attempt in about \(Int(delay.rounded())) s (\(error))")
            }
        case .held(let reason):
            // Everything else synced: no backoff, so edits keep flowing. The
            // hold waits for the user; status shows it from the store.
            backoff.succeeded()
            retryAt = nil
            updateStatus { $0.retryLine = nil }
            if reason != lastHoldLogged { log("sync: \(reason)") }
            lastHoldLogged = reason
        case .blocked(let reason):
            // Retrying cannot help until the user acts; the store's status
            // line carries the reason and the way out.
            blocked = true
            backoff.succeeded()
            retryAt = nil
            updateStatus {
                $0.retryLine = "Sync stays off in this mount until the token or the profile is changed; notesfs sync checks again"
            }
            if reason != lastBlockLogged { log("sync is off: \(reason)") }
            lastBlockLogged = reason
        case .storeFailed(let reason):
            scheduleRetry { delay in
                ("sync stopped by the local database: \(reason); next try in \(Int(delay.rounded())) s",
                 "Next sync attempt in about \(Int(delay.rounded())) s (\(reason))")
            }
        }
        return outcome
    }

    /// Backs off after a run that did not succeed: logs and shows the status
    /// line; the loop sleeps until `retryAt`. `describe` gets the delay in seconds.
    private func scheduleRetry(_ describe: (Double) -> (log: String, status: String)) {
        let delay = backoff.failed(unit: random())
        retryAt = clock.now() + delay
        let text = describe(delay)
        log(text.log)
        updateStatus { $0.retryLine = text.status }
    }

    /// Changes the actor's status and publishes the whole new value for
    /// status's readers on other threads (the only writer of `publishedStatus`).
    private func updateStatus(_ change: (inout StatusSnapshot) -> Void) {
        change(&status)
        let snapshot = status
        publishedStatus.withLock { $0 = snapshot }
    }
}
