import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Synchronization
import Testing
import TestSupport

/// Several `notesfs serve` processes on one PostgreSQL, behind haproxy
/// (issue 7): long polls wake across processes, the feed stays gapless,
/// a killed server or a restarted database loses nothing and applies nothing twice.
@Suite(.serialized) struct PostgresMultiProcessTests {
    /// The shared cluster and the fleet's tools, or nil after a loud skip.
    static func ready() -> Bool {
        guard PostgresTestCluster.cluster() != nil else { return false }
        if let reason = PostgresFleet.unavailableReason {
            skipLoudly("PostgreSQL multi-process tests: \(reason)")
            return false
        }
        return true
    }

    /// Tells writers to finish.
    final class StopFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    /// What writers were told, per entity: every applied version, in order.
    final class Ledger: Sendable {
        private let state = Mutex<(applied: [Int64: EntityRef], retries: Int, unavailable: Int)>(([:], 0, 0))
        func record(_ pushed: RemoteClient.Pushed, _ changes: [Change]) throws {
            try state.withLock { state in
                for (change, result) in zip(changes, pushed.results) {
                    guard let version = result.appliedVersion else {
                        throw HarnessError("\(change.ref) was not applied: \(result.status)")
                    }
                    guard state.applied[version] == nil else { throw HarnessError("version \(version) was given twice") }
                    state.applied[version] = change.ref
                }
                state.retries += pushed.retries
                state.unavailable += pushed.unavailable
            }
        }
        private let unavailableSeen = Atomic<Int>(0)
        /// A writer met a 503 (counted at once, not when its push finally succeeds).
        func sawUnavailable() { unavailableSeen.add(1, ordering: .sequentiallyConsistent) }
        var unavailableSoFar: Int { unavailableSeen.load(ordering: .sequentiallyConsistent) }
        var applied: [Int64: EntityRef] { state.withLock { $0.applied } }
        var retries: Int { state.withLock { $0.retries } }
        var unavailable: Int { state.withLock { $0.unavailable } }
        /// The newest acknowledged version of each entity.
        var latest: [EntityRef: Int64] {
            var latest: [EntityRef: Int64] = [:]
            for (version, ref) in applied where version > latest[ref] ?? 0 { latest[ref] = version }
            return latest
        }
    }

    /// One writer: edits its own notes (on the version it was told) or makes
    /// new ones, one to three changes a push, retrying like a client, until `stop`.
    static func writer(
        _ client: RemoteClient, _ ledger: Ledger, index: Int, until stop: @escaping @Sendable () -> Bool
    ) async throws {
        var mine: [NoteID: Int64] = [:]
        var generator = SplitMix64(seed: Seeds.one(11) &+ UInt64(index))
        var round = 0
        while !stop() {
            round += 1
            var changes: [Change] = []
            var used = Set<NoteID>()
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                if let (id, version) = mine.randomElement(using: &generator), !used.contains(id), Bool.random(using: &generator) {
                    used.insert(id)
                    changes.append(Make.note(id, body: "w\(index) r\(round)\n", base: version))
                } else {
                    let id = NoteID()
                    used.insert(id)
                    changes.append(Make.note(id, body: "w\(index) new r\(round)\n"))
                }
            }
            let pushed = try await client.pushRetrying(changes, onUnavailable: { ledger.sawUnavailable() })
            try ledger.record(pushed, changes)
            for (change, result) in zip(changes, pushed.results) {
                if let version = result.appliedVersion { mine[NoteID(change.id)] = version }
            }
        }
    }

    /// The server's final state equals what clients were told: each entity at
    /// its newest acknowledged version, and the counter at the number of
    /// acknowledged versions (nothing applied twice, nothing unacknowledged).
    static func checkFinalState(_ client: RemoteClient, _ account: PostgresTestAccount, _ ledger: Ledger) async throws {
        let rows = try await client.drain()
        let latest = ledger.latest
        #expect(rows.count == latest.count, "server has \(rows.count) entities, clients made \(latest.count)")
        let wrong = latest.filter { ref, version in rows[ref]?.version != version }
        #expect(wrong.isEmpty, "\(wrong.count) entities differ from what clients were told, e.g. \(wrong.first.map { "\($0)" } ?? "")")
        let versions = ledger.applied.keys.sorted()
        #expect(versions == Array(1...Int64(max(1, versions.count))).prefix(versions.count).map { $0 }, "acknowledged versions are 1...n")
        let records = try await account.store.accounts()
        let counter = records.first?.counter ?? -1
        #expect(counter == Int64(versions.count), "counter \(counter), acknowledged \(versions.count)")
    }

    /// A 503 for a database that is down says so without the database's
    /// address or error text, and names the serve log line that has them.
    static func checkUnavailableReply(_ reply: Reply, log: () -> String) throws {
        #expect(reply.status == 503, "\(reply.text.prefix(300))")
        #expect(!reply.text.contains("PostgreSQL") && !reply.text.contains("127.0.0.1"), "\(reply.text.prefix(300))")
        let marker = "log reference "
        let reference = try #require(reply.text.range(of: marker).map { reply.text[$0.upperBound...].prefix(8) })
        #expect(reference.count == 8 && reference.allSatisfy(\.isHexDigit), "\(reply.text.prefix(300))")
        let line = log().split(separator: "\n").first { $0.contains("\(reference): ") }
        #expect(line?.contains("PostgreSQL") == true, "the serve log has the details under \(reference)")
    }

    /// What an operator types: migrate, add an account, serve, revoke, new epoch,
    /// all through the real binary with `--postgres`.
    @Test func theAccountAndServerCommandsWorkOnPostgreSQL() async throws {
        guard Self.ready(), let binary = MountFixture.binaryPath else { return }
        let conninfo = try PostgresTestCluster.conninfo(schema: "cli_" + UUID().uuidString.prefix(8).lowercased())
        func notesfs(_ arguments: [String]) async throws -> MountFixture.Result {
            try await onThread { try MountFixture.run([binary] + arguments) }
        }
        let migrated = try await notesfs(["server", "migrate", "--postgres", conninfo])
        #expect(migrated.status == 0, "\(migrated.standardError)")
        #expect(try await notesfs(["server", "migrate", "--postgres", conninfo]).status == 0, "migrating twice is fine")
        #expect(try await notesfs(["server", "migrate", "--data", "/tmp"]).status == 2, "migrate needs --postgres")
        #expect(try await notesfs(["account", "list", "--data", "/tmp", "--postgres", conninfo]).status == 2)
        let added = try await notesfs(["account", "add", "erin", "--postgres", conninfo])
        #expect(added.status == 0, "\(added.standardError)")
        let token = added.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(AccessToken(text: token) != nil, "account add prints the token: \(added.standardOutput)")
        let again = try await notesfs(["account", "add", "erin", "--postgres", conninfo])
        #expect(
            again.status == 0 && again.standardError.contains("exists"),
            "a second add makes a second token: \(again.standardError)")
        let secondToken = again.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(AccessToken(text: secondToken) != nil && secondToken != token)
        let listed = try await notesfs(["account", "list", "--postgres", conninfo]).standardOutput
        #expect(listed.split(separator: "\n").contains { $0.hasPrefix("erin ") && $0.split(separator: " ").dropFirst().first == "2" },
            "one account with two tokens: \(listed)")

        let fleet = try PostgresFleet(conninfo: conninfo, processes: 1)
        defer { fleet.stop() }
        let client = RemoteClient(port: fleet.ports[0], token: token)
        #expect(try await client.push([Make.note(body: "through the command line\n")]).status == 200)
        #expect(try await RemoteClient(port: fleet.ports[0], token: secondToken).push([Make.note()]).status == 200)
        #expect(try await notesfs(["account", "revoke", "erin", "--postgres", conninfo]).status == 0)
        // The serve process hears of the revocation through NOTIFY.
        #expect(try await waitUntil { try await client.push([Make.note()]).status == 401 }, "a revoked token is refused")
        let epoch = try await notesfs(["server", "new-epoch", "--postgres", conninfo])
        #expect(epoch.status == 0 && epoch.standardOutput.contains("New epoch"), "\(epoch.standardError)")
    }

    @Test func aCommitThroughOneProcessWakesALongPollHeldByTheOther() async throws {
        guard Self.ready() else { return }
        let account = try await PostgresTestAccount.inSharedCluster()
        let fleet = try PostgresFleet(conninfo: account.conninfo)
        defer { fleet.stop() }
        let first = RemoteClient(port: fleet.ports[0], token: account.token)
        let second = RemoteClient(port: fleet.ports[1], token: account.token)
        let start = try await first.changes(since: nil)
        // Every serve process keeps the one installation secret: the account has one key.
        let other = try await second.changes(since: nil)
        #expect(start.account != nil && start.account == other.account)
        // The longest wait the server allows: a poll no commit woke would answer an empty page.
        async let polled = first.changes(since: start.nextCursor, wait: 30)
        #expect(try await waitUntil { try await first.heldLongPolls() == 1 }, "the poll is parked in the first process")
        let reply = try await second.push([Make.note(body: "from the other process\n")])
        #expect(reply.status == 200)
        let page = try await polled
        #expect(page.changes.count == 1, "\(fleet.logs.suffix(2000))")
        await account.store.close()
    }

    @Test func eightWritersAndTwoReadersThroughHAProxySeeAGaplessFeed() async throws {
        guard Self.ready() else { return }
        let account = try await PostgresTestAccount.inSharedCluster()
        let fleet = try PostgresFleet(conninfo: account.conninfo)
        defer { fleet.stop() }
        let client = RemoteClient(port: fleet.port, token: account.token)
        let ledger = Ledger()
        let seconds = GapFreeFeedTests.seconds
        // Writers go on past `seconds` until enough changes were acknowledged
        // (a busy machine is slower, not wrong), up to a ceiling.
        let began = ContinuousClock.now
        let stop: @Sendable () -> Bool = {
            let elapsed = ContinuousClock.now - began
            if elapsed >= .seconds(GapFreeFeedTests.secondsMax) { return true }
            return elapsed >= .seconds(seconds) && ledger.applied.count >= GapFreeFeedTests.changesMin
        }
        let writing = SharedCount(8)
        try await withThrowingTaskGroup(of: [String].self) { group in
            for index in 0..<8 {
                group.addTask {
                    defer { writing.add(-1) }
                    try await Self.writer(client, ledger, index: index, until: stop)
                    return []
                }
            }
            for reader in 0..<2 {
                group.addTask {
                    var problems: [String] = []
                    var seen: [EntityRef: Int64] = [:]
                    var cursor: SyncCursor?
                    var last: Int64 = 0
                    func pull(wait: Int?) async throws -> Bool {
                        let page = try await client.changes(since: cursor, limit: 50, wait: wait)
                        for row in page.changes {
                            if row.version <= last { problems.append("reader \(reader): \(row.version) after \(last)") }
                            last = row.version
                            seen[row.ref] = row.version
                        }
                        cursor = page.nextCursor
                        return page.hasMore
                    }
                    while writing.value > 0 { _ = try await pull(wait: 1) }
                    // Every writer has stopped: drain what is left.
                    while try await pull(wait: nil) {}
                    for (version, ref) in ledger.applied where (seen[ref] ?? 0) < version {
                        problems.append("reader \(reader) passed over version \(version) of \(ref)")
                    }
                    if seen != ledger.latest { problems.append("reader \(reader) ended with \(seen.count) entities, clients made \(ledger.latest.count)") }
                    return problems
                }
            }
            var problems: [String] = []
            for try await found in group { problems += found }
            #expect(problems.isEmpty, "\(problems.prefix(10))")
        }
        #expect(
            ledger.applied.count >= GapFreeFeedTests.changesMin,
            "only \(ledger.applied.count) changes in \(GapFreeFeedTests.secondsMax) s")
        try await Self.checkFinalState(client, account, ledger)
        // Both processes served requests.
        for (index, server) in fleet.servers.enumerated() {
            #expect(server.output.contains("POST /v1/push 200"), "process \(index) served no push")
        }
        FileHandle.standardError.write(
            Data("PostgreSQL gap-free feed, 2 processes behind haproxy: \(ledger.applied.count) changes in \(seconds) s\n".utf8))
        await account.store.close()
    }

    /// Two real mounts whose requests haproxy spreads over both processes: a
    /// long poll parked on one process must be woken by a push through the
    /// other, or the mounts would only meet at their next timed poll. Then one
    /// process dies and the mounts carry on through the survivor.
    @Test func twoMountsSyncingThroughTheBalancerConvergeAndSurviveALostProcess() async throws {
        guard Self.ready() else { return }
        if let reason = MountFixture.unavailableReason {
            skipLoudly("two mounts through the balancer: \(reason)")
            return
        }
        let account = try await PostgresTestAccount.inSharedCluster()
        let fleet = try PostgresFleet(conninfo: account.conninfo)
        defer { fleet.stop() }
        let tokenPath = fleet.directory.file("token")
        try Data((account.token + "\n").utf8).write(to: URL(fileURLWithPath: tokenPath))
        chmod(tokenPath, 0o600)
        let port = fleet.port
        try await onThread {
            var mounts: [MountFixture] = []
            defer { mounts.forEach { $0.remove() } }
            for name in ["laptop", "desktop"] {
                let mount = try MountFixture(mount: false)
                mounts.append(mount)
                try mount.mount(extraArguments: [
                    "--server", "http://127.0.0.1:\(port)", "--token-file", tokenPath, "--device-name", name,
                ])
            }
            let (a, b) = (mounts[0], mounts[1])
            // Under the mounts' 30 s long poll: a poll that no push wakes fails this.
            func converge(_ what: String, seconds: Double, _ expected: [String: String]) throws {
                try MountFixture.waitFor(what, mounts: mounts, seconds: seconds) {
                    a.tree() == expected && b.tree() == expected && a.hasNothingPending && b.hasNothingPending
                }
            }

            try a.checkedShell("mkdir Work && echo plan > Work/plan.md && echo first > first.md")
            try b.checkedShell("mkdir Home && echo milk > Home/list.md")
            try converge("both mounts show both mounts' notes", seconds: 25, [
                "Work/": "", "Work/plan.md": "plan\n", "first.md": "first\n", "Home/": "", "Home/list.md": "milk\n",
            ])
            for (index, server) in fleet.servers.enumerated() {
                #expect(server.output.contains(" /v1/"), "process \(index) served none of the mounts' requests")
            }

            // Edits on both sides, each seen by the other through whichever process serves it.
            try a.checkedShell("echo eggs >> Home/list.md && for i in 1 2 3 4 5 6; do echo n$i > Work/n$i.md; done")
            try b.checkedShell("mv Work/plan.md Work/done.md && sed -i 's/first/First/' first.md")
            var expected: [String: String] = [
                "Work/": "", "Work/done.md": "plan\n", "first.md": "First\n", "Home/": "", "Home/list.md": "milk\neggs\n",
            ]
            for i in 1...6 { expected["Work/n\(i).md"] = "n\(i)\n" }
            try converge("both mounts show the edits, the rename and the new notes", seconds: 25, expected)

            fleet.servers[0].signal(SIGKILL)
            _ = fleet.servers[0].wait()
            try b.checkedShell("echo bread >> Home/list.md && rm Work/n1.md")
            try a.checkedShell("echo second > second.md")
            expected["Home/list.md"] = "milk\neggs\nbread\n"
            expected["Work/n1.md"] = nil
            expected["second.md"] = "second\n"
            try converge("the mounts converge through the surviving process", seconds: 60, expected)
        }
        await account.store.close()
    }

    @Test func killingOneServerMidPushLosesNothingAndAppliesNothingTwice() async throws {
        guard Self.ready() else { return }
        let account = try await PostgresTestAccount.inSharedCluster()
        let fleet = try PostgresFleet(conninfo: account.conninfo)
        defer { fleet.stop() }
        let client = RemoteClient(port: fleet.port, token: account.token)
        let ledger = Ledger()
        let stopped = StopFlag()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<6 {
                group.addTask { try await Self.writer(client, ledger, index: index, until: { stopped.isSet }) }
            }
            // Killed under load, then load goes on through the survivor.
            _ = try await waitUntil { ledger.applied.count >= 20 }
            fleet.servers[0].signal(SIGKILL)
            fleet.servers[0].wait()
            let appliedAtKill = ledger.applied.count
            _ = try await waitUntil { ledger.applied.count >= appliedAtKill + 20 }
            stopped.set()
            try await group.waitForAll()
        }
        FileHandle.standardError.write(
            Data("killed one of two servers: \(ledger.applied.count) changes applied, \(ledger.retries) retried requests\n".utf8))
        #expect(ledger.applied.count >= 40)
        try await Self.checkFinalState(client, account, ledger)
        await account.store.close()
    }

    @Test func aDatabaseRestartDuringLoadAnswers503ThenRecoversWithNothingLost() async throws {
        guard Self.ready() else { return }
        // A cluster of its own: this test stops it.
        let cluster = try PostgresCluster.start(settings: PostgresTestCluster.settings)
        defer { cluster.stop() }
        let account = try await PostgresTestAccount.make(conninfo: cluster.conninfo())
        let fleet = try PostgresFleet(conninfo: account.conninfo)
        defer { fleet.stop() }
        let client = RemoteClient(port: fleet.port, token: account.token)
        let ledger = Ledger()
        let stopped = StopFlag()
        var appliedBeforeRestart = 0
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<4 {
                group.addTask { try await Self.writer(client, ledger, index: index, until: { stopped.isSet }) }
            }
            _ = try await waitUntil { ledger.applied.count >= 10 }
            try await onThread { try cluster.stopServer(immediate: true) }
            // The writers meet the database down (and retry).
            _ = try await waitUntil { ledger.unavailableSoFar > 0 }
            try Self.checkUnavailableReply(
                try await RemoteClient(port: fleet.ports[0], token: account.token).push([Make.note()]),
                log: { fleet.servers[0].output })
            appliedBeforeRestart = ledger.applied.count
            try await onThread { try cluster.restart() }
            _ = try await waitUntil(60) { ledger.applied.count >= appliedBeforeRestart + 10 }
            stopped.set()
            try await group.waitForAll()
        }
        FileHandle.standardError.write(
            Data(("database restart: \(ledger.applied.count) changes applied (\(appliedBeforeRestart) before the restart), "
                + "\(ledger.unavailable) answers 503, \(ledger.retries) retried requests\n").utf8))
        #expect(ledger.unavailable > 0, "no 503 while the database was down")
        #expect(ledger.applied.count > appliedBeforeRestart, "nothing applied after the restart: \(fleet.logs.suffix(1500))")
        // The store of the test itself reconnects too.
        try await Self.checkFinalState(client, account, ledger)
        for server in fleet.servers { #expect(server.isRunning) }
        await account.store.close()
    }
}
