import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncProtocol
import Synchronization
import TestSupport
import Testing

/// Counts requests by kind and can fail them, around another transport.
final class CountingTransport: SyncTransport {
    let inner: any SyncTransport
    let pushes = Atomic<Int>(0)
    let pulls = Atomic<Int>(0)
    let failNext = Atomic<Int>(0)

    init(_ inner: any SyncTransport) { self.inner = inner }

    private func maybeFail() throws(TransportError) {
        if failNext.load(ordering: .relaxed) > 0 {
            failNext.subtract(1, ordering: .relaxed)
            throw .offline("injected")
        }
    }

    func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
        try maybeFail()
        pushes.add(1, ordering: .relaxed)
        return try await inner.push(request)
    }

    func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
        if waitSeconds == 0 {
            try maybeFail()
            pulls.add(1, ordering: .relaxed)
        }
        // The long poll is not under test here: keep it short.
        return try await inner.changes(since: since, limit: limit, waitSeconds: min(waitSeconds, 0))
    }

    func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage {
        try await inner.index(after: after, limit: limit)
    }

    func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse {
        try await inner.fetch(request)
    }
}

@Suite(.serialized) struct SchedulerTests {
    @Test(arguments: [
        (failures: 1, unit: 0.0, expected: 0.5), (failures: 1, unit: 1.0, expected: 1.0),
        (failures: 3, unit: 1.0, expected: 4.0), (failures: 20, unit: 1.0, expected: 300.0),
        (failures: 20, unit: 0.0, expected: 150.0),
    ])
    func backoffDoublesWithJitterUpToTheCap(failures: Int, unit: Double, expected: Double) {
        var backoff = Backoff(baseSeconds: 1, capSeconds: 300)
        var delay = 0.0
        for _ in 0..<failures { delay = backoff.failed(unit: unit) }
        #expect(delay == expected)
        backoff.succeeded()
        #expect(backoff.failed(unit: 1) == 1)
    }


    @Test func theProgressLineSaysHowFarHowFastAndHowLong() {
        var progress = SyncScheduler.Progress(running: true, pulled: 3_000, pushed: 0, elapsedSeconds: 2)
        #expect(progress.line == "Syncing: 3000 notes received, 0 sent, 1500/s")
        progress.remainingEstimate = 7_000
        #expect(progress.line == "Syncing: 3000 of ~10000 notes received, 0 sent, 1500/s, about 5 s left")
        // Too early for a rate: no rate and no time left.
        let starting = SyncScheduler.Progress(running: true, pulled: 0, pushed: 0, elapsedSeconds: 0.1, remainingEstimate: 10)
        #expect(starting.line == "Syncing: 0 of ~10 notes received, 0 sent")
    }

    @Test func statusSeesARunThatLastsOverASecondWithItsTotalAndTheNextRetry() {
        let progress = SyncScheduler.Progress(
            running: true, pulled: 1_234, pushed: 2, elapsedSeconds: 2, remainingEstimate: 8_766)
        #expect(
            progress.live(retry: nil)
                == LiveSync(running: true, received: 1_234, sent: 2, expectedTotal: 10_000, elapsedSeconds: 2))
        let brief = SyncScheduler.Progress(running: true, pulled: 5, pushed: 0, elapsedSeconds: 0.5)
        #expect(brief.live(retry: nil) == LiveSync(running: false))
        #expect(SyncScheduler.Progress().live(retry: "Next sync attempt in about 4 s (offline)")
            == LiveSync(running: false, retry: "Next sync attempt in about 4 s (offline)"))
    }

    @Test func aStreamOfWritesIsOnePush() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let device = try world.device("a")
        let transport = CountingTransport(device.transport)
        let engine = try SyncEngine(replica: device.store.replica, transport: transport)
        var configuration = SyncScheduler.Configuration()
        // Quiet for 5 s ends the stream: far longer than the 5 ms between its
        // writes, even on a machine that stalls the test for a second or two.
        configuration.debounceSeconds = 5
        configuration.debounceMaxSeconds = 60
        configuration.syncedEditQuietSeconds = 5
        let scheduler = SyncScheduler(
            engine: engine, replica: device.store.replica, transport: transport, configuration: configuration)
        await scheduler.start()
        #expect(try await waitUntil { await scheduler.completedRuns >= 1 })
        let id = try device.store.createNote(in: .root, title: "n.md", body: Data("0\n".utf8))
        for line in 1...20 {
            try device.store.replaceBody(of: id, with: Data((0...line).map { "\($0)\n" }.joined().utf8))
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        #expect(try await waitUntil { try device.store.status().pendingCount == 0 })
        #expect(transport.pushes.load(ordering: .relaxed) == 1)
        await scheduler.stop()
    }

    @Test func closingAnEditedSyncedNoteSendsItWithoutWaitingForTheDebounce() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let device = try world.device("a")
        let transport = CountingTransport(device.transport)
        let engine = try SyncEngine(replica: device.store.replica, transport: transport)
        var configuration = SyncScheduler.Configuration()
        // Only the close can explain a push before the ceiling of the wait below.
        configuration.debounceSeconds = 600
        configuration.debounceMaxSeconds = 600
        configuration.syncedEditQuietSeconds = 600
        let id = try device.store.createNote(in: .root, title: "n.md", body: Data("0\n".utf8))
        #expect(await engine.sync() == .succeeded, "the note is on the server")
        let scheduler = SyncScheduler(
            engine: engine, replica: device.store.replica, transport: transport, configuration: configuration)
        await scheduler.start()
        #expect(try await waitUntil { await scheduler.completedRuns >= 1 })
        let pushesBefore = transport.pushes.load(ordering: .relaxed)
        try device.store.replaceBody(of: id, with: Data("edited\n".utf8))
        scheduler.fileClosed()
        #expect(try await waitUntil { try device.store.status().pendingCount == 0 })
        #expect(transport.pushes.load(ordering: .relaxed) == pushesBefore + 1)
        await scheduler.stop()
    }

    @Test func failedRunsBackOffAndRetryUntilTheyWork() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let device = try world.device("a")
        let transport = CountingTransport(device.transport)
        let engine = try SyncEngine(replica: device.store.replica, transport: transport)
        var configuration = SyncScheduler.Configuration()
        configuration.backoffBaseSeconds = 0.05
        configuration.backoffCapSeconds = 0.2
        let scheduler = SyncScheduler(
            engine: engine, replica: device.store.replica, transport: transport, configuration: configuration,
            random: { 0.5 })
        try device.store.createNote(in: .root, title: "n.md", body: Data("kept\n".utf8))
        transport.failNext.store(3, ordering: .relaxed)
        await scheduler.start()
        #expect(try await waitUntil { await scheduler.lastRunOutcome == .succeeded })
        #expect(try device.store.status().pendingCount == 0)
        #expect(await scheduler.completedRuns >= 2, "at least one failed run, then the one that worked")
        #expect(await scheduler.lastRunOutcome == .succeeded)
        #expect(scheduler.live.retry == nil)
        #expect(!scheduler.live.running)
        await scheduler.stop()
    }
}

extension SchedulerTests {
    @Test func aFirstSyncThatFailedStartsAsSoonAsTheServerAnswersNotAfterItsBackoff() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let device = try world.device("a")
        let transport = CountingTransport(device.transport)
        let engine = try SyncEngine(replica: device.store.replica, transport: transport)
        var configuration = SyncScheduler.Configuration()
        configuration.backoffBaseSeconds = 60  // the run's own retry would come far too late
        configuration.backoffCapSeconds = 60
        let scheduler = SyncScheduler(
            engine: engine, replica: device.store.replica, transport: transport, configuration: configuration,
            random: { 0 })
        try device.store.createNote(in: .root, title: "n.md", body: Data("kept\n".utf8))
        transport.failNext.store(2, ordering: .relaxed)
        await scheduler.start()
        #expect(try await waitUntil { await scheduler.lastRunOutcome == .succeeded })
        #expect(try device.store.status().pendingCount == 0)
        await scheduler.stop()
    }
}
