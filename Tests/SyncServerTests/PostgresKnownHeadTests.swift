import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import Testing
import TestSupport

@testable import SyncServer
import SyncServerPostgres

/// With PostgreSQL, a process keeps each account's head in memory only while
/// it hears every commit: another process's commit forgets it through its
/// notification, a listener that connected again forgets every head, and a
/// notification whose connection was killed is sent again.
@Suite(.serialized) struct PostgresKnownHeadTests {
    /// Two processes on one fresh schema, and an administrator's connection.
    struct Fleet {
        let schema: String
        let conninfo: String
        let a: ServingProcess
        let b: ServingProcess
        let admin: PostgresConnection
        let token: String

        init() async throws {
            schema = "k_" + UUID().uuidString.prefix(8).lowercased()
            conninfo = try PostgresTestCluster.conninfo(schema: schema)
            a = ServingProcess(store: try PostgresServerStore(conninfo: conninfo))
            b = ServingProcess(store: try PostgresServerStore(conninfo: conninfo))
            admin = try PostgresConnection(conninfo: conninfo)
            let channel = #"LISTEN "notesfs_\#(schema)""#
            let admin = admin
            let listening = try await waitUntil {
                try admin.execute("SELECT count(*) FROM pg_stat_activity WHERE query = $1", channel).int64(0, 0) >= 2
            }
            guard listening else { throw HarnessError("the listeners did not start") }
            token = try await AccountManager(store: a.store).add(name: "gale").token.text
        }

        /// The account's id, for SQL of the test's own.
        func account() async throws -> AccountID {
            guard let parsed = AccessToken(text: token), let record = try await a.store.token(id: parsed.id) else {
                throw HarnessError("no token")
            }
            return record.account
        }

        /// A's cursor at the head, known to A (read once if need be).
        func headKnownToA() async throws -> SyncCursor {
            let a = a
            let token = token
            var cursor = try await a.changes(token: token, since: nil).nextCursor
            let known = try await waitUntil {
                cursor = try await a.changes(token: token, since: cursor).nextCursor
                return try await a.knowsHead(cursor, of: token)
            }
            guard known else { throw HarnessError("A never knew the head") }
            return cursor
        }

        func close() async {
            await a.close()
            await b.close()
        }
    }

    @Test func aCommitThroughAnotherProcessWakesAPollParkedAtTheKnownHead() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let fleet = try await Fleet()
        let cursor = try await fleet.headKnownToA()
        let (a, token) = (fleet.a, fleet.token)
        async let polled = a.changes(token: token, since: cursor, wait: 30)
        #expect(try await waitUntil { a.server.notifier.waitingCount == 1 })
        _ = try await fleet.b.push([Make.note(title: "from-b.md")], token: fleet.token)
        #expect(try await polled.changes.map { $0.note?.title } == ["from-b.md"])
        await fleet.close()
    }

    @Test func aListenerThatConnectsAgainForgetsEveryHeadAndWakesThePolls() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let fleet = try await Fleet()
        let cursor = try await fleet.headKnownToA()
        let (a, token) = (fleet.a, fleet.token)
        async let polled = a.changes(token: token, since: cursor, wait: 30)
        #expect(try await waitUntil { a.server.notifier.waitingCount == 1 })
        // A commit nobody announces (written by hand, no NOTIFY), as one
        // sent while A's listener was away would be.
        let account = try await fleet.account()
        try fleet.admin.execute(
            """
            WITH a AS (UPDATE accounts SET counter = counter + 1 WHERE account_id = $1 RETURNING counter)
            INSERT INTO entities(account_id, kind, id, version, change_id, deleted, name, body, updated_at)
            SELECT $1, 'note', gen_random_uuid(), counter, gen_random_uuid(), false, 'unannounced.md', 'x'::bytea, 0 FROM a
            """, account.rawValue)
        // Both listeners lose their connections and listen again.
        try fleet.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", #"LISTEN "notesfs_\#(fleet.schema)""#)
        // Without forgetting, the poll would sleep its 30 s on the old head and end empty.
        #expect(try await polled.changes.map { $0.note?.title } == ["unannounced.md"])
        await fleet.close()
    }

    @Test func aNotificationWhoseConnectionWasKilledIsSentAgain() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let fleet = try await Fleet()
        // B's notifier connects with its first commit; A hears it.
        _ = try await fleet.b.push([Make.note(title: "warm-up.md")], token: fleet.token)
        let cursor = try await fleet.headKnownToA()
        let (a, token) = (fleet.a, fleet.token)
        async let polled = a.changes(token: token, since: cursor, wait: 30)
        #expect(try await waitUntil { a.server.notifier.waitingCount == 1 })
        // Every notifier's connection dies (other tests' notifiers reconnect too).
        try fleet.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'notesfs-notifier'")
        _ = try await fleet.b.push([Make.note(title: "after-kill.md")], token: fleet.token)
        // A dropped notification would leave the poll on the old head for its 30 s.
        #expect(try await polled.changes.map { $0.note?.title } == ["after-kill.md"])
        await fleet.close()
    }
}
