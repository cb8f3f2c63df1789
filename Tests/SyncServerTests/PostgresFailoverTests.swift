import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Synchronization
import Testing
import TestSupport

/// The fleet survives losing a process: clients pushing through haproxy to
/// two `notesfs serve --postgres` processes carry on through the survivor
/// when one is killed with SIGKILL, the killed one restarts on its port and
/// takes requests again, and every change a client was told about is in the
/// feed exactly once, with the answer a retry of the same change ids gets.
@Suite(.serialized) struct PostgresFailoverTests {
    /// One push as its client made it: the exact bytes (sent again, same
    /// change ids, on every retry) and the answer that finally came.
    struct SentPush: Sendable {
        let client: Int
        let body: Data
        let changeIds: [ChangeID]
        let results: [ChangeResult]
        /// Attempts that ended without an answer (connection cut, 502/503/504) before the one that did.
        let cutAttempts: Int
        let sentAt: ContinuousClock.Instant
        let answeredAt: ContinuousClock.Instant
    }

    /// Every answered push of every client.
    final class PushLog: Sendable {
        private let pushes = Mutex<[SentPush]>([])
        func add(_ push: SentPush) { pushes.withLock { $0.append(push) } }
        var all: [SentPush] { pushes.withLock { $0 } }
        var count: Int { pushes.withLock { $0.count } }
        /// The first answer each client got after `instant`, by client.
        func firstAnswers(after instant: ContinuousClock.Instant) -> [Int: ContinuousClock.Instant] {
            var first: [Int: ContinuousClock.Instant] = [:]
            for push in all where push.answeredAt > instant {
                first[push.client] = min(first[push.client] ?? push.answeredAt, push.answeredAt)
            }
            return first
        }
        /// The longest a push waited for its answer (first attempt to answer) among those `included`.
        func longestWait(_ included: (SentPush) -> Bool) -> Duration {
            all.filter(included).map { $0.answeredAt - $0.sentAt }.max() ?? .zero
        }
    }

    static let clients = 4

    /// A client with a device of its own: pushes one or two new notes at a
    /// time and retries a push without an answer with the same bytes, as
    /// the sync engine does, until `stop`.
    static func client(_ remote: RemoteClient, index: Int, log: PushLog, until stop: @escaping @Sendable () -> Bool)
        async throws
    {
        let device = DeviceID()
        var round = 0
        while !stop() {
            round += 1
            let changes = (0..<(1 + round % 2)).map { _ in Make.note(body: "client \(index) round \(round)\n") }
            let body = try WireCoding.encoder().encode(PushRequest(device: device, changes: changes))
            var cut = 0
            let sentAt = ContinuousClock.now
            let deadline = sentAt + .seconds(60)
            while true {
                do {
                    let reply = try await remote.send("POST", Endpoint.push, body: body)
                    if reply.status == 200 {
                        log.add(
                            SentPush(
                                client: index, body: body, changeIds: changes.map(\.changeId),
                                results: try reply.decode(PushResponse.self).results, cutAttempts: cut,
                                sentAt: sentAt, answeredAt: .now))
                        break
                    }
                    guard [502, 503, 504].contains(reply.status) else {
                        throw HarnessError("push answered \(reply.status): \(reply.text.prefix(300))")
                    }
                } catch is RemoteClient.NetworkError {}
                cut += 1
                guard ContinuousClock.now < deadline else { throw HarnessError("client \(index): no answer for 60 s") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Every row of the feed from the start, duplicates and all.
    static func feed(_ remote: RemoteClient) async throws -> [EntityVersion] {
        var rows: [EntityVersion] = []
        var cursor: SyncCursor?
        for _ in 0..<10_000 {
            let page = try await remote.changes(since: cursor)
            rows += page.changes
            cursor = page.nextCursor
            if !page.hasMore { break }
        }
        return rows
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    @Test func killingAServeProcessUnderLoadLosesNothingAppliesNothingTwiceAndItRejoins() async throws {
        guard PostgresMultiProcessTests.ready() else { return }
        let account = try await PostgresTestAccount.inSharedCluster()
        let fleet = try PostgresFleet(conninfo: account.conninfo)
        defer { fleet.stop() }
        let remote = RemoteClient(port: fleet.port, token: account.token)
        let log = PushLog()
        let stopped = Flag()
        var killedAt = ContinuousClock.now
        var rejoinedAfter = Duration.zero
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<Self.clients {
                group.addTask { try await Self.client(remote, index: index, log: log, until: { stopped.isSet }) }
            }
            // Both processes serve the load, then one dies mid-load.
            #expect(try await waitUntil(60) { log.count >= 40 }, "no load: \(fleet.logs.suffix(1500))")
            let victim = fleet.servers[0]
            victim.signal(SIGKILL)
            killedAt = .now
            victim.wait()
            // Every client carries on through the survivor before the victim comes back.
            let carriedOn = try await waitUntil(60) { log.firstAnswers(after: killedAt).count == Self.clients }
            #expect(carriedOn, "clients stalled after the kill: \(fleet.logs.suffix(1500))")
            let restartedAt = ContinuousClock.now
            try fleet.restart(0)
            // Rejoined: haproxy sends it pushes again.
            let rejoined = try await waitUntil(60) { fleet.servers[0].output.contains("POST /v1/push 200") }
            #expect(rejoined, "the restarted process got no push: \(fleet.servers[0].output.suffix(1500))")
            rejoinedAfter = ContinuousClock.now - restartedAt
            let countAtRejoin = log.count
            _ = try await waitUntil(60) { log.count >= countAtRejoin + 20 }
            stopped.set()
            try await group.waitForAll()
        }
        let pushes = log.all
        // Pushes under way at the kill or sent in the second after it, against those before.
        let stall = log.longestWait { $0.answeredAt > killedAt && $0.sentAt < killedAt + .seconds(1) }
        let usual = log.longestWait { $0.answeredAt < killedAt }

        // Every answered change is in the feed exactly once, at the version its client was told.
        var told: [ChangeID: Int64] = [:]
        for push in pushes {
            #expect(push.results.map(\.changeId) == push.changeIds, "one result per change, in order")
            for result in push.results {
                guard let version = result.appliedVersion else {
                    Issue.record("\(result.changeId) was not applied: \(result.status)")
                    continue
                }
                #expect(told.updateValue(version, forKey: result.changeId) == nil, "\(result.changeId) answered twice")
            }
        }
        let rows = try await Self.feed(remote)
        var inFeed: [ChangeID: [Int64]] = [:]
        for row in rows { inFeed[row.changeId, default: []].append(row.version) }
        let missing = told.filter { inFeed[$0.key] == nil }
        let doubled = inFeed.filter { $0.value.count > 1 }
        let wrong = told.filter { changeId, version in inFeed[changeId].map { $0 != [version] } ?? false }
        let unknown = inFeed.keys.filter { told[$0] == nil }
        #expect(missing.isEmpty, "\(missing.count) acknowledged changes are not in the feed")
        #expect(doubled.isEmpty, "\(doubled.count) changes are in the feed more than once")
        #expect(wrong.isEmpty, "\(wrong.count) changes are at another version than their client was told")
        #expect(unknown.isEmpty, "\(unknown.count) changes in the feed were never acknowledged")
        let counterBefore = try await account.store.accounts().first?.counter ?? -1
        #expect(counterBefore == Int64(told.count), "counter \(counterBefore), acknowledged changes \(told.count)")

        // Every push again, same bytes: the same answer, nothing applied again.
        let cut = pushes.filter { $0.cutAttempts > 0 }
        var differing: [ChangeID] = []
        for push in pushes {
            let reply = try await remote.send("POST", Endpoint.push, body: push.body)
            guard reply.status == 200 else {
                Issue.record("a repeated push answered \(reply.status): \(reply.text.prefix(300))")
                break
            }
            if try reply.decode(PushResponse.self).results != push.results { differing += push.changeIds }
        }
        #expect(
            differing.isEmpty,
            "\(differing.count) repeated changes got another answer, e.g. \(differing.first.map { "\($0)" } ?? "")")
        let counterAfter = try await account.store.accounts().first?.counter ?? -1
        #expect(
            counterAfter == counterBefore, "repeating the pushes moved the counter \(counterBefore) → \(counterAfter)")

        FileHandle.standardError.write(
            Data(("failover: \(pushes.count) pushes (\(told.count) changes) from \(Self.clients) clients; "
                + "\(cut.count) pushes retried after the kill "
                + "(\(cut.map(\.cutAttempts).reduce(0, +)) attempts without an answer); "
                + "the longest wait for an answer around the kill \(Self.milliseconds(stall)) ms "
                + "(before it \(Self.milliseconds(usual)) ms); "
                + "the restarted process took a push \(Self.milliseconds(rejoinedAfter)) ms after it was started\n")
                .utf8))
        await account.store.close()
    }
}
