import Foundation
import NotesModel
import SyncProtocol
import Testing
import TestSupport

@testable import SyncServer
import SyncServerSQLite

/// One `SyncServer` on its own store object, following the store's commits as
/// `notesfs serve` does (`followCommits`), so polls at a known head read nothing.
struct ServingProcess: Sendable {
    let store: any ServerStore
    let server: SyncServer

    init(store: any ServerStore & CommitReporting, follow: Bool = true) {
        self.store = store
        server = SyncServer(store: store)
        if follow { server.followCommits(of: store) }
    }

    func send(_ method: String, _ path: String, token: String, query: [String: String] = [:], body: Data = Data())
        async -> Reply
    {
        let response = await server.handle(
            ServerRequest(method: method, path: path, query: query, authorization: "Bearer \(token)", body: body))
        return Reply(status: response.status, headers: [:], body: response.body)
    }

    func push(_ changes: [Change], token: String, device: DeviceID = DeviceID()) async throws -> PushResponse {
        let body = try WireCoding.encoder().encode(PushRequest(device: device, changes: changes))
        let reply = await send("POST", Endpoint.push, token: token, body: body)
        guard reply.status == 200 else { throw HarnessError("push answered \(reply.status): \(reply.text)") }
        return try reply.decode(PushResponse.self)
    }

    func changes(token: String, since: SyncCursor?, wait: Int? = nil) async throws -> ChangesPage {
        var query: [String: String] = [:]
        if let since { query[Endpoint.Query.since] = since.rawValue }
        if let wait { query[Endpoint.Query.wait] = String(wait) }
        let reply = await send("GET", Endpoint.changes, token: token, query: query)
        guard reply.status == 200 else { throw HarnessError("changes answered \(reply.status): \(reply.text)") }
        return try reply.decode(ChangesPage.self)
    }

    /// Whether the server answers a poll at `cursor` from memory.
    func knowsHead(_ cursor: SyncCursor, of token: String) async throws -> Bool {
        guard let epoch = cursor.epoch, let parsed = AccessToken(text: token),
            let account = try await store.token(id: parsed.id)?.account
        else { return false }
        return server.heads.known(account, epoch: epoch) == cursor.counter
    }

    func close() async {
        server.beginShutdown()
        await store.close()
    }
}

/// A server that keeps its accounts' heads in memory (SQLite) never answers
/// "nothing new" for long while another connection to its database file has
/// committed: the writer notices (`PRAGMA data_version`) and wakes every poll.
@Suite struct KnownHeadTests {
    @Test func aPollParkedAtTheKnownHeadSeesACommitMadeThroughAnotherConnection() async throws {
        let directory = try TemporaryDirectory(prefix: "notesfs-known-head")
        defer { directory.remove() }
        let path = directory.file("server.sqlite")
        let serving = ServingProcess(store: try SQLiteServerStore(path: path))
        let token = try await AccountManager(store: serving.store).add(name: "erin").token.text
        let start = try await serving.changes(token: token, since: nil)
        // Another connection to the same file, as a second process would have.
        let elsewhere = ServingProcess(store: try SQLiteServerStore(path: path), follow: false)
        _ = try await elsewhere.push([Make.note(title: "first.md", body: "one\n")], token: token)
        // Noticed, and a read keeps the new head. (The other server records
        // the token's use in a commit of its own, which may land later and
        // make this one forget the head again; the read then comes again.)
        var atHead = start.nextCursor
        let noticed = try await waitUntil {
            let page = try await serving.changes(token: token, since: start.nextCursor)
            guard !page.changes.isEmpty else { return false }
            atHead = page.nextCursor
            return try await serving.knowsHead(page.nextCursor, of: token)
        }
        #expect(noticed, "the poll below is answered from memory")

        async let polled = serving.changes(token: token, since: atHead, wait: 30)
        #expect(try await waitUntil { serving.server.notifier.waitingCount == 1 })
        _ = try await elsewhere.push([Make.note(title: "second.md", body: "two\n")], token: token)
        // Without the writer's check the poll would end empty after its 30 s.
        #expect(try await polled.changes.map { $0.note?.title } == ["second.md"])
        await elsewhere.close()
        await serving.close()
    }

    @Test func anIdleLongPollAtTheKnownHeadEndsEmptyAtItsCursorAndACommitWakesTheNext() async throws {
        let directory = try TemporaryDirectory(prefix: "notesfs-known-head")
        defer { directory.remove() }
        let serving = ServingProcess(store: try SQLiteServerStore(path: directory.file("server.sqlite")))
        let token = try await AccountManager(store: serving.store).add(name: "finn").token.text
        let start = try await serving.changes(token: token, since: nil)
        #expect(try await serving.knowsHead(start.nextCursor, of: token))
        let idle = try await serving.changes(token: token, since: start.nextCursor, wait: 1)
        #expect(idle.changes.isEmpty && idle.nextCursor == start.nextCursor)
        // A push through this process forgets the head before it wakes the poll.
        async let polled = serving.changes(token: token, since: start.nextCursor, wait: 30)
        #expect(try await waitUntil { serving.server.notifier.waitingCount == 1 })
        _ = try await serving.push([Make.note(title: "n.md", body: "n\n")], token: token)
        let page = try await polled
        #expect(page.changes.map { $0.note?.title } == ["n.md"])
        #expect(try await serving.knowsHead(page.nextCursor, of: token))
        await serving.close()
    }
}
