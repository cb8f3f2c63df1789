import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer
import SyncServerPostgres
import Testing
import TestSupport

/// The PostgreSQL store's group commit: pushes queued while a group runs go
/// into the next group's one transaction, and still succeed or fail alone.
@Suite(.serialized) struct PostgresGroupCommitTests {
    /// Pushes started in this order, each a while after the previous one so
    /// they queue in that order. (The group writer's queue cannot be watched
    /// from outside the store, so this spacing is the one wait here that is
    /// not an event; it is far longer than a push takes to reach the queue.)
    private static func launch(
        _ pushes: [@Sendable () async throws -> Reply]
    ) async throws -> [Task<Reply, any Error>] {
        var tasks: [Task<Reply, any Error>] = []
        for push in pushes {
            tasks.append(Task { try await push() })
            try await Task.sleep(for: .milliseconds(150))
        }
        return tasks
    }

    /// Waits until some session waits for a lock `holder` holds.
    private static func waitUntilBlocked(by holder: PostgresConnection, _ admin: PostgresConnection) async throws {
        let holderPID = try holder.execute("SELECT pg_backend_pid()::bigint").int64(0, 0)
        let blocked = try await waitUntil {
            try admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE $1::integer = ANY(pg_blocking_pids(pid))", holderPID
            ).int64(0, 0) > 0
        }
        if !blocked { throw HarnessError("nothing waited for the holder's lock") }
    }

    /// A store with one group writer thread.
    private static let oneWriter = StoreFactory(name: "postgres, one writer") { directory in
        try PostgresServerStore(
            conninfo: try PostgresTestCluster.conninfo(schema: PostgresTestCluster.schema(for: directory)),
            options: PostgresServerStore.Options(pool: PostgresPool.Options(connectionsMax: 4), groupWriters: 1))
    }

    /// One group writer whose sessions look for deadlocks after 5 s.
    private static let oneSlowDeadlockCheckWriter = StoreFactory(name: "postgres, one writer, 5 s deadlock check") {
        directory in
        let conninfo = try PostgresTestCluster.conninfo(schema: PostgresTestCluster.schema(for: directory))
            .replacingOccurrences(of: "options='", with: "options='-c deadlock_timeout=5s ")
        return try PostgresServerStore(
            conninfo: conninfo,
            options: PostgresServerStore.Options(pool: PostgresPool.Options(connectionsMax: 4), groupWriters: 1))
    }

    @Test func aGroupWhereOnePushFailsAppliesTheOthersExactlyOnceWithAGaplessFeed() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        // One writer thread, so everything queued behind the blocked group
        // lands in the next one.
        let h = try Harness(Self.oneWriter)
        let store = try #require(h.store as? PostgresServerStore)
        let blockerName = "blocker-\(UUID().uuidString.prefix(6))"
        let blockerToken = try await h.account(blockerName)
        let bob = try await h.account("bob")
        let carol = try await h.account("carol")
        let blocker = try #require(try await store.account(named: blockerName)).id
        let bobID = try #require(try await store.account(named: "bob")).id
        let carolID = try #require(try await store.account(named: "carol")).id

        // Hold the blocker's account row so the writer's first group waits on
        // it; everything pushed meanwhile queues for the next group.
        let holder = try PostgresConnection(conninfo: store.conninfo)
        try holder.execute("BEGIN")
        try holder.execute("SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", blocker.rawValue)
        let first = Task { try await h.pushRaw([Make.note()], token: blockerToken) }
        try await Self.waitUntilBlocked(by: holder, try PostgresConnection(conninfo: store.conninfo))

        let note = NoteID()
        let create = Make.note(note, body: "one\n")
        var altered = create
        altered.note?.title = "other.md"
        let reused = altered
        let stray = NoteID()
        let longTitle = String(repeating: "t", count: ProtocolLimits.standard.nameBytesMax + 1)
        let tasks = try await Self.launch([
            { try await h.pushRaw([create], token: bob) },  // applied at 1
            { try await h.pushRaw([Make.note(stray), reused], token: bob) },  // 409: nothing of it stays
            { try await h.pushRaw([create], token: bob) },  // the first answer again
            { try await h.pushRaw([Make.note(note, body: "two\n", base: 1)], token: bob) },  // sees version 1: applied at 2
            { try await h.pushRaw([Make.note(), Make.note()], token: carol) },  // 1, 2
            { try await h.pushRaw([Make.note(title: longTitle), Make.note()], token: carol) },  // refused, 3
            { try await h.pushRaw([Make.note(NoteID(), base: 7)], token: carol) },  // conflict
        ])
        try holder.execute("COMMIT")
        #expect(try await first.value.status == 200)
        var replies: [Reply] = []
        for task in tasks { replies.append(try await task.value) }

        #expect(replies.map(\.status) == [200, 409, 200, 200, 200, 200, 200])
        #expect(replies[1].errorCode == "change_id_reused")
        #expect(replies[2].pushResultBytes == replies[0].pushResultBytes, "a repeated change id gets its first answer")
        let results = try replies.filter { $0.status == 200 }.map { try $0.decode(PushResponse.self).results }
        #expect(results[0].map(\.appliedVersion) == [1])
        #expect(results[2].map(\.appliedVersion) == [2])
        #expect(results[3].map(\.appliedVersion) == [1, 2])
        #expect(results[4].map(\.refusalReason) == [.nameTooLong, nil])
        #expect(results[4].map(\.appliedVersion) == [nil, 3])
        #expect(results[5].first?.conflictCurrent != nil)

        // Gapless feeds holding exactly what was acknowledged.
        let bobRows = try await h.drain(token: bob).rows
        #expect(bobRows.map(\.version) == [2])
        #expect(bobRows.map(\.ref) == [create.ref])
        let carolRows = try await h.drain(token: carol).rows
        #expect(carolRows.map(\.version) == [1, 2, 3])

        // All of it was one transaction: one group, one commit.
        let admin = try PostgresConnection(conninfo: store.conninfo)
        let transactions = try admin.execute(
            "SELECT count(DISTINCT xmin::text) FROM entities WHERE account_id IN ($1, $2)", bobID.rawValue,
            carolID.rawValue)
        #expect(try transactions.int64(0, 0) == 1)
        let remembered = try admin.execute(
            "SELECT count(*) FROM seen_changes WHERE account_id = $1", bobID.rawValue)
        #expect(try remembered.int64(0, 0) == 2, "the 409 push left no answers behind")
        await h.close()
    }

    @Test func aPushWhoseWriteFailsInsideAGroupFailsAloneInItsOwnSavepoint() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let h = try Harness(Self.oneWriter)
        let store = try #require(h.store as? PostgresServerStore)
        let blockerToken = try await h.account("blocker")
        let erin = try await h.account("erin")
        let blocker = try #require(try await store.account(named: "blocker")).id
        let holder = try PostgresConnection(conninfo: store.conninfo)
        // A row the database refuses: this push's write fails in PostgreSQL
        // itself, which sends the whole group down the isolated path.
        try holder.executeScript(
            """
            CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN RAISE EXCEPTION 'poisoned row'; END $$;
            CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON entities
                FOR EACH ROW WHEN (NEW.name = 'poison.md') EXECUTE FUNCTION refuse_poison();
            """)
        try holder.execute("BEGIN")
        try holder.execute("SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", blocker.rawValue)
        let first = Task { try await h.pushRaw([Make.note()], token: blockerToken) }
        try await Self.waitUntilBlocked(by: holder, try PostgresConnection(conninfo: store.conninfo))
        let tasks = try await Self.launch([
            { try await h.pushRaw([Make.note()], token: erin) },
            { try await h.pushRaw([Make.note(title: "poison.md")], token: erin) },
            { try await h.pushRaw([Make.note()], token: erin) },
        ])
        try holder.execute("COMMIT")
        #expect(try await first.value.status == 200)
        var replies: [Reply] = []
        for task in tasks { replies.append(try await task.value) }
        #expect(replies.map(\.status) == [200, 500, 200])
        let versions = try replies.filter { $0.status == 200 }.map {
            try $0.decode(PushResponse.self).results.map(\.appliedVersion)
        }
        #expect(versions == [[1], [2]])
        #expect(try await h.drain(token: erin).rows.map(\.version) == [1, 2])
        // (Rows written in savepoints carry their subtransactions' ids, so
        // xmin cannot show the common commit here as it does above.)
        await h.close()
    }

    @Test func aGroupChosenAsADeadlockVictimRunsAgainAndAppliesItsPushOnce() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let h = try Harness(Self.oneSlowDeadlockCheckWriter)
        let store = try #require(h.store as? PostgresServerStore)
        let dana = try await h.account("dana")
        let danaID = try #require(try await store.account(named: "dana")).id
        let create = Make.note(body: "one\n")
        #expect(try await h.pushRaw([create], token: dana).status == 200)

        // The other side of a lock cycle: it holds the note's row, the group
        // takes the account row and waits for the note's row, then this side
        // asks for the account row. PostgreSQL looks for a cycle once per
        // wait, deadlock_timeout after it began: the group's session looks 5 s
        // after it began waiting (this side asks well within that, however
        // busy the machine), this side after 60 s, so the group finds the
        // cycle and is the one aborted.
        let holder = try PostgresConnection(conninfo: store.conninfo)
        try holder.execute("SET deadlock_timeout = '60s'")
        try holder.execute("BEGIN")
        try holder.execute(
            "SELECT 1 FROM entities WHERE account_id = $1 AND kind = $2 AND id = $3::uuid FOR UPDATE",
            danaID.rawValue, create.ref.kind.rawValue, UUIDText.format(create.ref.id))
        let edit = Task { try await h.pushRaw([Make.note(NoteID(create.id), body: "two\n", base: 1)], token: dana) }
        try await Self.waitUntilBlocked(by: holder, try PostgresConnection(conninfo: store.conninfo))
        // Returns only once the group let go of the account row: it cannot
        // commit without the note's row, so it was rolled back.
        try holder.execute("SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", danaID.rawValue)
        try holder.execute("COMMIT")

        let reply = try await edit.value
        #expect(reply.status == 200, "\(reply.text.prefix(300))")
        #expect(try reply.decode(PushResponse.self).results.map(\.appliedVersion) == [2])
        let rows = try await h.drain(token: dana).rows
        #expect(rows.map(\.version) == [2])
        let admin = try PostgresConnection(conninfo: store.conninfo)
        let counter = try admin.execute("SELECT counter FROM accounts WHERE account_id = $1", danaID.rawValue)
        #expect(try counter.int64(0, 0) == 2, "the rerun group applied the edit once")
        let remembered = try admin.execute("SELECT count(*) FROM seen_changes WHERE account_id = $1", danaID.rawValue)
        #expect(try remembered.int64(0, 0) == 2)
        await h.close()
    }

    /// Blocks the one writer on a held account row, runs `pushes` into the
    /// next group together, and returns their replies.
    private static func inOneGroup(
        _ h: Harness, _ store: PostgresServerStore, _ pushes: [@Sendable () async throws -> Reply]
    ) async throws -> [Reply] {
        let blockerName = "blocker-\(UUID().uuidString.prefix(6))"
        let blockerToken = try await h.account(blockerName)
        let blocker = try #require(try await store.account(named: blockerName)).id
        let holder = try PostgresConnection(conninfo: store.conninfo)
        try holder.execute("BEGIN")
        try holder.execute("SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", blocker.rawValue)
        let first = Task { try await h.pushRaw([Make.note()], token: blockerToken) }
        try await Task.sleep(for: .milliseconds(300))
        let tasks = try await launch(pushes)
        try holder.execute("COMMIT")
        #expect(try await first.value.status == 200)
        var replies: [Reply] = []
        for task in tasks { replies.append(try await task.value) }
        return replies
    }

    @Test func aGroupWritingOneNoteSeveralTimesKeepsEachReplacedVersionOnce() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let h = try Harness(Self.oneWriter)
        let store = try #require(h.store as? PostgresServerStore)
        let fay = try await h.account("fay")
        let fayID = try #require(try await store.account(named: "fay")).id
        let note = NoteID(), fresh = NoteID()
        _ = try await h.push(Make.note(note, body: "one\n"), token: fay)  // 1, before the group
        let replies = try await Self.inOneGroup(h, store, [
            { try await h.pushRaw([Make.note(note, body: "two\n", base: 1)], token: fay) },  // 2
            { try await h.pushRaw([Make.note(note, body: "three\n", base: 2)], token: fay) },  // 3
            { try await h.pushRaw([.delete(.note(note), baseVersion: 3), Make.note(fresh, body: "new\n")], token: fay) },
            { try await h.pushRaw([Make.note(fresh, body: "newer\n", base: 5)], token: fay) },  // 6
        ])
        #expect(replies.map(\.status) == [200, 200, 200, 200])
        let page = try await h.versions(token: fay, of: .note(note))
        #expect(page.versions.map(\.version) == [4, 3, 2, 1])
        #expect(page.versions.map(\.deleted) == [true, false, false, false])
        for (version, body) in [(Int64(1), "one\n"), (2, "two\n"), (3, "three\n")] {
            #expect(try await h.version(token: fay, of: .note(note), version)?.note?.bodyBytes() == Data(body.utf8))
        }
        #expect(try await h.versions(token: fay, of: .note(fresh)).versions.map(\.version) == [6, 5])

        // Each replaced version once, replaced when its successor was made,
        // all written by the group's one transaction.
        let admin = try PostgresConnection(conninfo: store.conninfo)
        let rows = try admin.execute(
            """
            SELECT v.version, v.replaced_at = coalesce(n.updated_at, e.updated_at)
            FROM entity_versions v
            JOIN entities e ON e.account_id = v.account_id AND e.kind = v.kind AND e.id = v.id
            LEFT JOIN entity_versions n ON n.account_id = v.account_id AND n.kind = v.kind AND n.id = v.id
                AND n.version = (SELECT min(w.version) FROM entity_versions w
                    WHERE w.account_id = v.account_id AND w.kind = v.kind AND w.id = v.id AND w.version > v.version)
            WHERE v.account_id = $1 ORDER BY v.version
            """, fayID.rawValue)
        #expect(try (0..<rows.rowCount).map { try rows.int64($0, 0) } == [1, 2, 3, 5])
        #expect(try (0..<rows.rowCount).allSatisfy { try rows.bool($0, 1) })
        let transactions = try admin.execute(
            "SELECT count(DISTINCT xmin::text) FROM entity_versions WHERE account_id = $1", fayID.rawValue)
        #expect(try transactions.int64(0, 0) == 1)
        await h.close()
    }

    @Test func anIsolatedGroupKeepsTheReplacedVersionsOfThePushesThatApplied() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let h = try Harness(Self.oneWriter)
        let store = try #require(h.store as? PostgresServerStore)
        let gus = try await h.account("gus")
        let note = NoteID()
        _ = try await h.push(Make.note(note, body: "one\n"), token: gus)
        let holder = try PostgresConnection(conninfo: store.conninfo)
        try holder.executeScript(
            """
            CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN RAISE EXCEPTION 'poisoned row'; END $$;
            CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON entities
                FOR EACH ROW WHEN (NEW.name = 'poison.md') EXECUTE FUNCTION refuse_poison();
            """)
        let replies = try await Self.inOneGroup(h, store, [
            { try await h.pushRaw([Make.note(note, body: "two\n", base: 1)], token: gus) },  // 2
            { try await h.pushRaw([Make.note(note, title: "poison.md", body: "x\n", base: 2)], token: gus) },
            { try await h.pushRaw([Make.note(note, body: "three\n", base: 2)], token: gus) },  // 3
        ])
        #expect(replies.map(\.status) == [200, 500, 200])
        let page = try await h.versions(token: gus, of: .note(note))
        #expect(page.versions.map(\.version) == [3, 2, 1])
        #expect(try await h.version(token: gus, of: .note(note), 2)?.note?.bodyBytes() == Data("two\n".utf8))
        await h.close()
    }
}
