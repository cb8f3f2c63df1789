import Foundation
import NotesModel
import PostgresKit
import SyncServer
import SyncServerPostgres
import Synchronization
import Testing
import TestSupport

/// A flag one task sets and others read.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
}

/// The PostgreSQL store's own promises beyond the contract suite: migrations
/// safe with several processes, a bounded pool with a clear error, reconnects.
@Suite(.serialized) struct PostgresStoreTests {
    @Test func severalStoresStartingAtOnceMigrateOnceAndAgreeOnTheEpochAndSecret() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let conninfo = try PostgresTestCluster.conninfo(schema: "m_" + UUID().uuidString.prefix(8).lowercased())
        let stores = try await withThrowingTaskGroup(of: PostgresServerStore.self) { group in
            for _ in 0..<4 {
                group.addTask { try await onThread { try PostgresServerStore(conninfo: conninfo) } }
            }
            var stores: [PostgresServerStore] = []
            for try await store in group { stores.append(store) }
            return stores
        }
        var epochs = Set<String>()
        var secrets = Set<String>()
        for store in stores {
            epochs.insert(try await store.epoch())
            secrets.insert(try await store.installationSecret())
        }
        #expect(epochs.count == 1)
        #expect(secrets.count == 1, "every process keeps the one installation secret")
        let connection = try PostgresConnection(conninfo: conninfo)
        #expect(try connection.execute("SELECT version FROM notesfs_schema").int(0, 0) == 5)
        // Bodies are compressed with lz4 (the test cluster's PostgreSQL has it).
        let compression = try connection.execute(
            """
            SELECT attrelid::regclass::text, attcompression::text FROM pg_attribute
            WHERE attname = 'body' AND attrelid IN ('entities'::regclass, 'entity_versions'::regclass)
            ORDER BY 1
            """)
        #expect(try (0..<compression.rowCount).map { try compression.string($0, 1) } == ["l", "l"])
        #expect(try connection.execute("SELECT key FROM server_meta ORDER BY key").rowCount == 2, "epoch and secret, once each")
        for store in stores { await store.close() }
    }

    @Test func anExhaustedPoolFailsAtOnceOrAfterItsTimeoutWithAClearError() async throws {
        guard let cluster = PostgresTestCluster.cluster() else { return }
        let pool = PostgresPool(
            conninfo: cluster.conninfo(),
            options: PostgresPool.Options(connectionsMax: 1, waitersMax: 1, acquireTimeoutSeconds: 2))
        // The holder keeps the only connection until both others have failed.
        let holding = Flag(), release = Flag()
        async let holder: Int = pool.withConnection { connection in
            holding.set()
            while !release.isSet { usleep(5_000) }
            return try connection.execute("SELECT 1").rowCount
        }
        #expect(try await waitUntil { holding.isSet })
        /// The error of one more request, or nil when it got the connection.
        @Sendable func attempt() async -> PostgresError? {
            do {
                _ = try await pool.withConnection { try $0.execute("SELECT 1::bigint").int64(0, 0) }
                return nil
            } catch {
                return error as? PostgresError
            }
        }
        // The first waits its 2 s and fails; the second, started once the
        // first waits, finds the one waiting place taken and fails at once.
        let first = Task { await attempt() }
        #expect(try await waitUntil { pool.waitingCount == 1 })
        let second = await attempt()
        #expect(second?.description.contains("requests already wait") == true, "\(String(describing: second))")
        let errors = [await first.value, second]
        release.set()
        #expect(errors.allSatisfy { $0?.kind == .poolExhausted && $0?.isUnavailable == true }, "maps to 503: \(errors)")
        #expect(errors.contains { $0?.description.contains("no connection of 1 was free") == true }, "\(errors)")
        #expect(errors.contains { $0?.description.contains("requests already wait") == true }, "\(errors)")
        _ = try await holder
        // Free again: works.
        let one = try await pool.withConnection { try $0.execute("SELECT 1::bigint").int64(0, 0) }
        #expect(one == 1)
        pool.close()
    }

    @Test func aPooledConnectionKilledByTheServerIsReplacedWithoutAnError() async throws {
        guard let cluster = PostgresTestCluster.cluster() else { return }
        let pool = PostgresPool(conninfo: cluster.conninfo(), options: PostgresPool.Options(connectionsMax: 1))
        let pid = try await pool.withConnection { try $0.execute("SELECT pg_backend_pid()::bigint").int64(0, 0) }
        let admin = try PostgresConnection(conninfo: cluster.conninfo())
        try admin.execute("SELECT pg_terminate_backend($1::integer)", pid)
        #expect(
            try await waitUntil {
                try admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::integer", pid).int(0, 0) == 0
            })
        let other = try await pool.withConnection { try $0.execute("SELECT pg_backend_pid()::bigint").int64(0, 0) }
        #expect(other != pid)
        pool.close()
    }

    @Test func aSchemaNewerThanThisBinaryIsRefusedNotFixed() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let conninfo = try PostgresTestCluster.conninfo(schema: "n_" + UUID().uuidString.prefix(8).lowercased())
        let store = try PostgresServerStore(conninfo: conninfo, options: PostgresServerStore.Options(listen: false))
        await store.close()
        let connection = try PostgresConnection(conninfo: conninfo)
        try connection.execute("UPDATE notesfs_schema SET version = 99")
        #expect {
            _ = try PostgresServerStore(conninfo: conninfo, options: PostgresServerStore.Options(listen: false))
        } throws: { error in
            "\(error)".contains("newer than this notesfs")
        }
        #expect(try connection.execute("SELECT version FROM notesfs_schema").int(0, 0) == 99)
    }

    @Test func aRevocationInOneProcessReachesAnotherProcessesTokenCacheAtOnce() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let conninfo = try PostgresTestCluster.conninfo(schema: "k_" + UUID().uuidString.prefix(8).lowercased())
        let revoker = try PostgresServerStore(conninfo: conninfo)
        // A cache long enough that only the notification can explain a prompt revocation.
        let server = try PostgresServerStore(conninfo: conninfo, options: PostgresServerStore.Options(tokenCacheSeconds: 60))
        let account = try await revoker.createAccount(name: "dora", at: Date())
        try await revoker.addToken(account: account, tokenID: "tok1", secretHash: [1, 2, 3], at: Date())
        #expect(try await server.token(id: "tok1")?.revoked == false)
        try await revoker.revokeAccount(name: "dora", at: Date())
        // A generous ceiling, still half the cache's 60 s.
        let revoked = try await waitUntil { try await server.token(id: "tok1")?.revoked == true }
        #expect(revoked, "the other store still accepts a revoked token after 30 s")
        await revoker.close()
        await server.close()
    }

    /// `notesfs serve` hangs its long-poll notifier on other processes'
    /// commits: the handler must run at the same depth however many arrived
    /// (a function value kept bare in a Mutex was re-wrapped on every read, so
    /// each notification went two frames deeper, slower and slower).
    @Test func theRemoteCommitHandlerRunsAtTheSameDepthAfterManyNotifications() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let schema = "n_" + UUID().uuidString.prefix(8).lowercased()
        let conninfo = try PostgresTestCluster.conninfo(schema: schema)
        let writer = try PostgresServerStore(conninfo: conninfo)
        let listener = try PostgresServerStore(conninfo: conninfo)
        // Both stores listen (each on a connection of its own) before the first commit.
        let admin = try PostgresConnection(conninfo: conninfo)
        #expect(
            try await waitUntil {
                try admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query = $1", #"LISTEN "notesfs_\#(schema)""#
                ).int64(0, 0) >= 2
            })
        let depths = Mutex<[Int]>([])
        listener.onRemoteCommit { _ in
            let depth = Thread.callStackReturnAddresses.count
            depths.withLock { $0.append(depth) }
        }
        let account = try await writer.createAccount(name: "eve", at: Date())
        // One commit at a time, each heard before the next (notifications
        // queued together would be sent once): 60 calls of the handler.
        for commit in 1...60 {
            try await writer.push(account: account) { transaction in
                let version = try transaction.lockAccount() + 1
                try transaction.write(
                    StoredEntity(
                        ref: .note(NoteID()), version: version, changeId: ChangeID(), deleted: false, name: "n.md",
                        body: Data("x".utf8), parentId: nil, updatedAt: Date()), replacing: nil)
                try transaction.setCounter(version)
            }
            let heard = try await waitUntil { depths.withLock { $0.count } >= commit }
            #expect(heard, "commit \(commit) was not heard")
            if !heard { break }
        }
        let seen = depths.withLock { $0 }
        #expect(seen.count >= 60, "only \(seen.count) of 60 commits were heard")
        let deepest = try #require(seen.max()), shallowest = try #require(seen.min())
        #expect(deepest - shallowest < 20, "handler depth ranged \(shallowest)…\(deepest)")
        await writer.close()
        await listener.close()
    }

    @Test func notificationsArriveIntactWhateverTheirText() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let conninfo = try PostgresTestCluster.conninfo(schema: "q_" + UUID().uuidString.prefix(8).lowercased())
        let channel = "notesfs_test_" + UUID().uuidString.prefix(8).lowercased()
        let received = Mutex<Set<String>>([])
        let listener = try PostgresListener(conninfo: conninfo, channel: channel) { notification in
            guard let notification else { return }
            _ = received.withLock { $0.insert(notification.payload) }
        }
        defer { listener.stop() }
        let notifier = PostgresNotifier(conninfo: conninfo, channel: channel)
        defer { notifier.stop() }
        let payloads: Set<String> = ["c:plain:1", #"a "quoted" one"#, #"back\slash and \""#, "{braces}, commas", "ünïcödé"]
        // Sent again until all arrive: the listener may not be listening yet.
        for _ in 0..<300 where received.withLock({ $0 }) != payloads {
            for payload in payloads { notifier.notify(payload) }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(received.withLock { $0 } == payloads)
    }

    @Test func aDeadlockIsReportedAsARetryableTransactionFailure() async throws {
        guard let cluster = PostgresTestCluster.cluster() else { return }
        let database = cluster.conninfo()
        let table = "deadlock_" + UUID().uuidString.prefix(8).lowercased()
        let setup = try PostgresConnection(conninfo: database)
        try setup.executeScript("CREATE TABLE \(table)(id int PRIMARY KEY, n int); INSERT INTO \(table) VALUES (1, 0), (2, 0)")
        // Each side takes its first row, then waits for the other to hold its
        // own before reaching for it: a deadlock whatever the timing.
        let locked = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        /// Locks `first` then `second` in one transaction; returns the error, if any.
        @Sendable func cross(_ first: Int, _ second: Int) throws -> PostgresError? {
            let connection = try PostgresConnection(conninfo: database)
            let (mine, theirs) = first == 1 ? (locked.0, locked.1) : (locked.1, locked.0)
            do {
                try connection.transaction {
                    try connection.execute("UPDATE \(table) SET n = n + 1 WHERE id = $1::integer", first)
                    mine.signal()
                    guard theirs.wait(timeout: .now() + 60) == .success else {
                        throw HarnessError("the other side never took its first row")
                    }
                    try connection.execute("UPDATE \(table) SET n = n + 1 WHERE id = $1::integer", second)
                }
                return nil
            } catch let error as PostgresError {
                return error
            }
        }
        async let a = onThread { try cross(1, 2) }
        async let b = onThread { try cross(2, 1) }
        let errors = [try await a, try await b].compactMap { $0 }
        #expect(errors.count == 1, "exactly one side is chosen as the deadlock victim")
        #expect(errors.first?.isRetryableTransaction == true, "\(errors)")
        try setup.executeScript("DROP TABLE \(table)")
    }
}
