import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer
import SyncServerPostgres
import Testing
import TestSupport

/// A device's long poll sleeps through that device's own push whichever
/// process served the push: the commit's notification carries the device
/// and the versions its push made, and the process holding the poll
/// remembers them before it wakes its polls.
@Suite(.serialized) struct PostgresOwnChangesTests {
    /// One `SyncServer` on its own store object, wired to other processes' commits as `notesfs serve` does.
    struct Process {
        let store: PostgresServerStore
        let server: SyncServer

        init(conninfo: String) throws {
            store = try PostgresServerStore(conninfo: conninfo)
            let server = SyncServer(store: store)
            store.onRemoteCommit { commit in server.remoteCommitted(commit) }
            self.server = server
        }

        func send(_ method: String, _ path: String, token: String, query: [String: String] = [:], body: Data = Data())
            async -> Reply
        {
            let response = await server.handle(
                ServerRequest(method: method, path: path, query: query, authorization: "Bearer \(token)", body: body))
            return Reply(status: response.status, headers: [:], body: response.body)
        }

        func push(_ changes: [Change], token: String, device: DeviceID, cursor: SyncCursor? = nil) async throws
            -> PushResponse
        {
            let body = try WireCoding.encoder().encode(PushRequest(device: device, changes: changes, cursor: cursor))
            let reply = await send("POST", Endpoint.push, token: token, body: body)
            guard reply.status == 200 else { throw HarnessError("push answered \(reply.status): \(reply.text)") }
            return try reply.decode(PushResponse.self)
        }

        func changes(token: String, since: SyncCursor?, wait: Int? = nil, device: DeviceID? = nil) async throws
            -> ChangesPage
        {
            var query: [String: String] = [:]
            if let since { query[Endpoint.Query.since] = since.rawValue }
            if let wait { query[Endpoint.Query.wait] = String(wait) }
            if let device { query[Endpoint.Query.device] = device.description }
            let reply = await send("GET", Endpoint.changes, token: token, query: query)
            guard reply.status == 200 else { throw HarnessError("changes answered \(reply.status): \(reply.text)") }
            return try reply.decode(ChangesPage.self)
        }

        func close() async {
            server.beginShutdown()
            await store.close()
        }
    }

    @Test func aPollOnOneProcessSleepsThroughItsDevicesPushThroughAnotherAndWakesForAnotherDevice() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let schema = "o_" + UUID().uuidString.prefix(8).lowercased()
        let conninfo = try PostgresTestCluster.conninfo(schema: schema)
        let a = try Process(conninfo: conninfo)
        let b = try Process(conninfo: conninfo)
        // Both stores listen before the first commit.
        let admin = try PostgresConnection(conninfo: conninfo)
        #expect(
            try await waitUntil {
                try admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query = $1", #"LISTEN "notesfs_\#(schema)""#
                ).int64(0, 0) >= 2
            })
        let token = try await AccountManager(store: a.store).add(name: "dana").token.text
        let device = DeviceID()
        let start = try await b.changes(token: token, since: nil)

        // The device's poll, and a poll naming no device, parked on B.
        async let polled = b.changes(token: token, since: start.nextCursor, wait: 30, device: device)
        async let unnamed = b.changes(token: token, since: start.nextCursor, wait: 30)
        #expect(try await waitUntil { b.server.notifier.waitingCount == 2 }, "both polls are parked on B")

        // The device pushes through A from where its cursor stands.
        let own = try await a.push([Make.note(body: "mine\n")], token: token, device: device, cursor: start.nextCursor)
        let ownCursor = try #require(own.nextCursor)
        // B heard the commit: the poll naming no device wakes with it.
        #expect(try await unnamed.changes.map { $0.note?.bodyBytes() } == [Data("mine\n".utf8)])
        // The device's poll heard it too and parked again, having skipped its own change.
        #expect(try await waitUntil { b.server.notifier.waitingCount == 1 }, "the device's poll waits on")

        // Another device's change through A wakes it, with that change only.
        _ = try await a.push([Make.note(body: "theirs\n")], token: token, device: DeviceID())
        let page = try await polled
        #expect(
            page.changes.map { $0.note?.bodyBytes() } == [Data("theirs\n".utf8)], "the poll carried back its own change")
        #expect(page.from == ownCursor, "the page starts after the device's own change")
        await a.close()
        await b.close()
    }
}
