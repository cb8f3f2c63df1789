import Foundation
import HTTPServer
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncProtocol
import SyncServer
import Synchronization
import TestSupport
import Testing

/// `HTTPSyncTransport` against the real libmicrohttpd server on loopback.
@Suite(.serialized) struct HTTPTransportTests {
    /// A real HTTP server over a `SyncWorld`'s server, on an ephemeral port.
    final class LiveServer: Sendable {
        let world: SyncWorld
        let http: HTTPServer
        var url: URL { URL(string: "http://127.0.0.1:\(http.port)")! }

        init(configuration: SyncServer.Configuration = SyncServer.Configuration()) async throws {
            world = try await SyncWorld(configuration: configuration)
            http = try HTTPServer(
                server: world.server,
                configuration: HTTPServer.Configuration(
                    address: ListenAddress(host: "127.0.0.1", port: 0),
                    requestBodyBytesMax: world.server.configuration.limits.requestBodyBytesMax),
                logger: SilentLogger())
        }

        /// A device; `namedPolls` makes its long polls name it, as a mount's
        /// do. Its pushes tell the server its name, as a mount's do; a
        /// store of that name already made is opened again, under `newName`
        /// when given (a later mount session with `--device-name`).
        func device(_ name: String, namedPolls: Bool = false, newName: String? = nil) throws
            -> (store: NotesStore, transport: HTTPSyncTransport, engine: SyncEngine)
        {
            var configuration = StoreConfiguration()
            configuration.defaultDeviceName = name
            let store = try NotesStore(path: world.directory.file("\(name).sqlite"), configuration: configuration)
            if let newName { try store.admin.setDeviceName(newName) }
            let transport = HTTPSyncTransport(
                baseURL: url, token: world.token, device: namedPolls ? try store.device().id : nil,
                deviceName: try store.device().name)
            return (store, transport, try SyncEngine(replica: store.replica, transport: transport))
        }

        /// A started scheduler whose first run has ended and whose long poll is parked.
        func startPolling(engine: SyncEngine, store: NotesStore, transport: any SyncTransport) async throws
            -> SyncScheduler
        {
            let scheduler = SyncScheduler(engine: engine, replica: store.replica, transport: transport)
            await scheduler.start()
            let ran = try await waitUntil { await scheduler.completedRuns >= 1 }
            let parked = try await waitUntil { self.world.server.notifier.waitingCount >= 1 }
            guard ran, parked else { throw TransportError.offline("the scheduler never ran and parked its long poll") }
            return scheduler
        }

        func stop() {
            http.stop(graceSeconds: 2)
            world.remove()
        }
    }

    @Test func twoDevicesSyncThroughTheRealServer() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let a = try server.device("a"), b = try server.device("b")
        let big = String(repeating: "a line of text that compresses well\n", count: 2_000)
        try a.store.createNote(in: .root, title: "big.md", body: Data(big.utf8))
        #expect(await a.engine.sync() == .succeeded)
        #expect(await b.engine.sync() == .succeeded)
        let entry = try #require(try b.store.lookup(in: .root, name: "big.md"))
        #expect(try b.store.contents(of: entry.ref) == Data(big.utf8))
        // Both ways the note crossed the wire gzip-compressed.
        #expect(a.transport.wireCounters.bytesSent < big.utf8.count / 4)
        #expect(b.transport.wireCounters.bytesReceived < big.utf8.count / 4)
        // A sync with nothing to do costs one small request.
        let before = b.transport.wireCounters
        #expect(await b.engine.sync() == .succeeded)
        let after = b.transport.wireCounters
        #expect(after.requests - before.requests == 1)
        #expect(after.bytesReceived - before.bytesReceived < 1_000)
    }

    @Test func aWrongTokenIsUnauthorizedNotOffline() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let transport = HTTPSyncTransport(baseURL: server.url, token: AccessToken.generate().text)
        await #expect(throws: TransportError.self) {
            _ = try await transport.changes(since: nil, limit: 1, waitSeconds: 0)
        }
        do {
            _ = try await transport.changes(since: nil, limit: 1, waitSeconds: 0)
        } catch {
            guard case .unauthorized = error else {
                Issue.record("expected unauthorized, got \(error)")
                return
            }
        }
    }

    @Test func noServerIsOffline() async throws {
        // A port nothing listens on: bind one, note it, close it.
        let server = try await LiveServer()
        let url = server.url
        server.stop()
        let transport = HTTPSyncTransport(baseURL: url, token: AccessToken.generate().text)
        do {
            _ = try await transport.changes(since: nil, limit: 1, waitSeconds: 0)
            Issue.record("a stopped server answered")
        } catch {
            guard case .offline = error else {
                Issue.record("expected offline, got \(error)")
                return
            }
            #expect(error.isTransient)
        }
    }

    @Test func aForeignCursorIsGoneAndALongPollReturnsEmptyAfterItsWait() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let a = try server.device("a")
        #expect(await a.engine.sync() == .succeeded)
        do {
            _ = try await a.transport.changes(
                since: SyncCursor(epoch: "0123456789abcdef", counter: 5), limit: 1, waitSeconds: 0)
            Issue.record("a foreign cursor was answered")
        } catch {
            #expect(error == .cursorGone)
        }
        let cursor = try #require(try a.store.syncState().cursor)
        let started = Date()
        let page = try await a.transport.changes(since: SyncCursor(rawValue: cursor), limit: 1, waitSeconds: 1)
        #expect(page.changes.isEmpty)
        #expect(Date().timeIntervalSince(started) >= 0.9)
    }

    @Test func aParkedLongPollEndsSoonAfterCancelAllOrItsTaskIsCancelled() async throws {
        // Polls as long as the client allows (60 s), so that a poll that kept
        // its connection for its whole wait is told apart from a slow machine.
        var configuration = SyncServer.Configuration()
        configuration.limits.waitSecondsMax = HTTPSyncTransport.waitSecondsMax
        let server = try await LiveServer(configuration: configuration)
        defer { server.stop() }
        let a = try server.device("a")
        #expect(await a.engine.sync() == .succeeded)
        let cursor = SyncCursor(rawValue: try #require(try a.store.syncState().cursor))
        let transport = a.transport
        for viaTask in [false, true] {
            // A parked poll whose client left stays counted until its wait ends (docs/server.md).
            let parkedBefore = server.world.server.notifier.waitingCount
            let poll = Task<TransportError?, Never> {
                do {
                    _ = try await transport.changes(
                        since: cursor, limit: 1, waitSeconds: HTTPSyncTransport.waitSecondsMax)
                    return nil
                } catch let error as TransportError {
                    return error
                } catch {
                    return .serverBroke("unexpected \(error)")
                }
            }
            while server.world.server.notifier.waitingCount == parkedBefore {
                try await Task.sleep(for: .milliseconds(10))
            }
            let started = Date()
            if viaTask { poll.cancel() } else { transport.cancelAll() }
            let error = await poll.value
            #expect(error == .offline("cancelled"))
            // A generous ceiling, well under the poll's 60 s wait.
            #expect(Date().timeIntervalSince(started) < 40, "the poll kept its connection for its whole wait")
        }
        // The transport still works after cancelling.
        #expect(try await transport.changes(since: cursor, limit: 1, waitSeconds: 0).changes.isEmpty)
    }

    @Test func aChangeTheLongPollBringsIsAppliedWithoutPullingItAgain() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let a = try server.device("a"), b = try server.device("b")
        #expect(await a.engine.sync() == .succeeded)
        let scheduler = try await server.startPolling(engine: b.engine, store: b.store, transport: b.transport)
        let before = b.transport.wireCounters.requests
        try a.store.createNote(in: .root, title: "from a.md", body: Data("hello\n".utf8))
        #expect(await a.engine.sync() == .succeeded)
        #expect(try await waitUntil { try b.store.lookup(in: .root, name: "from a.md") != nil })
        #expect(try await waitUntil { server.world.server.notifier.waitingCount >= 1 }, "b polls again")
        // The poll's answer, and no pull: the re-armed poll is still parked.
        #expect(b.transport.wireCounters.requests - before == 1)
        #expect(try b.store.syncState().cursor == a.store.syncState().cursor)
        await scheduler.stop()
    }

    @Test func aDevicesOwnPushDoesNotWakeItsLongPollWhileAnotherDevicesChangeStillArrivesThroughIt() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let a = try server.device("a", namedPolls: true), b = try server.device("b")
        #expect(await b.engine.sync() == .succeeded)
        let scheduler = try await server.startPolling(engine: a.engine, store: a.store, transport: a.transport)
        let before = a.transport.wireCounters.requests
        try a.store.createNote(in: .root, title: "mine.md", body: Data("hello\n".utf8))
        // The local change wakes a push (after the debounce), as in a mount.
        #expect(try await waitUntil { try a.store.status().pendingCount == 0 })
        try await Task.sleep(for: .milliseconds(500))
        // The push alone: its own poll slept through it.
        #expect(a.transport.wireCounters.requests - before == 1)
        #expect(server.world.server.notifier.waitingCount == 1)
        try b.store.createNote(in: .root, title: "theirs.md", body: Data("hi\n".utf8))
        #expect(await b.engine.sync() == .succeeded)
        #expect(try await waitUntil { try a.store.lookup(in: .root, name: "theirs.md") != nil })
        #expect(try await waitUntil { server.world.server.notifier.waitingCount >= 1 }, "a polls again")
        // The poll's answer, applied as it is: no pull.
        #expect(a.transport.wireCounters.requests - before == 2)
        #expect(try a.store.syncState().cursor == b.store.syncState().cursor)
        await scheduler.stop()
    }

    /// Passes requests on; the first push reaches the server but its reply is lost.
    final class LosesFirstPushReply: SyncTransport {
        let inner: HTTPSyncTransport
        let lost = Atomic<Bool>(false)
        let polls = Atomic<Int>(0)

        init(_ inner: HTTPSyncTransport) { self.inner = inner }

        func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
            let response = try await inner.push(request)
            if !lost.exchange(true, ordering: .relaxed) { throw .offline("the reply was lost (injected)") }
            return response
        }

        func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
            if waitSeconds > 0 { polls.add(1, ordering: .relaxed) }
            return try await inner.changes(since: since, limit: limit, waitSeconds: waitSeconds)
        }

        func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage {
            try await inner.index(after: after, limit: limit)
        }

        func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse {
            try await inner.fetch(request)
        }
    }

    @Test func aPollTheServerStartedPastAPushWhoseReplyWasLostLeadsToARunNotToPollingInCircles() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let a = try server.device("a", namedPolls: true), b = try server.device("b")
        #expect(await b.engine.sync() == .succeeded)
        let transport = LosesFirstPushReply(a.transport)
        var configuration = SyncScheduler.Configuration()
        configuration.backoffBaseSeconds = 60  // the failed run's own retry stays out of the way
        let scheduler = SyncScheduler(
            engine: try SyncEngine(replica: a.store.replica, transport: transport), replica: a.store.replica,
            transport: transport,
            configuration: configuration)
        await scheduler.start()
        #expect(try await waitUntil { await scheduler.completedRuns >= 1 })
        try a.store.createNote(in: .root, title: "mine.md", body: Data("hello\n".utf8))
        #expect(try await waitUntil { await scheduler.completedRuns >= 2 && transport.lost.load(ordering: .relaxed) })
        #expect(await scheduler.lastRunOutcome?.succeeded == false)
        // b's change wakes a's poll; the server starts that page past a's own
        // push, where a's cursor never got to.
        let pollsBefore = transport.polls.load(ordering: .relaxed)
        try b.store.createNote(in: .root, title: "theirs.md", body: Data("hi\n".utf8))
        #expect(await b.engine.sync() == .succeeded)
        try await Task.sleep(for: .seconds(1))
        #expect(transport.polls.load(ordering: .relaxed) - pollsBefore <= 2, "the poll loop waits for a run")
        // That run (here asked for at once, outside the backoff) settles the
        // push from its replayed answer and brings b's note.
        #expect(await scheduler.syncNow() == .succeeded)
        #expect(try a.store.lookup(in: .root, name: "theirs.md") != nil)
        #expect(try a.store.status().pendingCount == 0)
        #expect(await b.engine.sync() == .succeeded)
        #expect(try b.store.lookup(in: .root, name: "mine.md") != nil)
        await scheduler.stop()
    }

    @Test func malformedInputIsRejectedNotRetried() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let a = try server.device("a")
        do {
            _ = try await a.transport.index(after: "not a token", limit: 1)
            Issue.record("a malformed after token was answered")
        } catch {
            guard case .rejected(let status, _, _) = error else {
                Issue.record("expected rejected, got \(error)")
                return
            }
            #expect(status == 400)
            #expect(!error.isTransient)
        }
    }
}
