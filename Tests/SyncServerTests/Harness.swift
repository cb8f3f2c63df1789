import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import SyncServerSQLite
import Synchronization
import TestSupport

/// Makes a store in a directory; calling it again on the same directory
/// reopens the same data. A PostgreSQL factory joins `all` later and the
/// whole contract suite runs against it unchanged.
struct StoreFactory: Sendable, CustomStringConvertible {
    let name: String
    let make: @Sendable (TemporaryDirectory) throws -> any ServerStore

    var description: String { name }

    static let sqlite = StoreFactory(name: "sqlite") { directory in
        try SQLiteServerStore(path: SQLiteServerStore.databasePath(inDirectory: directory.path))
    }

    static let all: [StoreFactory] = [.sqlite] + (PostgresTestCluster.included ? [.postgres] : [])
}

/// A clock tests can move.
final class ManualClock: Sendable {
    private let offset = Mutex<Double>(0)
    func advance(seconds: Double) { offset.withLock { $0 += seconds } }
    var clock: ServerClock {
        ServerClock { [self] in Date().addingTimeInterval(offset.withLock { $0 }) }
    }
}

/// A reply as a test sees it.
struct Reply: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try WireCoding.decoder().decode(type, from: body)
        } catch {
            throw HarnessError("cannot decode \(T.self) from \(status) \(String(decoding: body.prefix(400), as: UTF8.self)): \(error)")
        }
    }

    var errorCode: String? { try? decode(ErrorBody.self).error.code.rawValue }
    var text: String { String(decoding: body, as: UTF8.self) }

    /// A push answer's `results` array exactly as sent: what a repeated change
    /// id must get again byte for byte. (The cursors after it describe the
    /// feed at the time of each push.)
    var pushResultBytes: Data? {
        guard body.starts(with: Data(#"{"results":"#.utf8)),
            let end = body.range(of: Data(#","startCursor":"#.utf8))
        else { return nil }
        return body[..<end.lowerBound]
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// How requests reach the server: straight into `SyncServer.handle`, or
/// through a real HTTP server on loopback.
protocol Transport: Sendable {
    func send(_ request: ServerRequest, headers: [String: String]) async throws -> Reply
    func stop() async
}

struct DirectTransport: Transport {
    let server: SyncServer
    func send(_ request: ServerRequest, headers: [String: String]) async throws -> Reply {
        let response = await server.handle(request)
        var replyHeaders = ["content-type": response.contentType]
        for (name, value) in response.headers { replyHeaders[name.lowercased()] = value }
        return Reply(status: response.status, headers: replyHeaders, body: response.body)
    }
    func stop() async {}
}

/// Which transport a test runs over.
struct TransportKind: Sendable, CustomStringConvertible {
    let name: String
    let make: @Sendable (SyncServer) throws -> any Transport
    var description: String { name }

    static let direct = TransportKind(name: "direct") { DirectTransport(server: $0) }
}

/// One server on one store for one test, with helpers for the common requests.
final class Harness: Sendable {
    let directory: TemporaryDirectory
    let factory: StoreFactory
    let store: any ServerStore
    let server: SyncServer
    let transport: any Transport
    let clock: ManualClock
    let device = DeviceID()

    init(
        _ factory: StoreFactory, _ transportKind: TransportKind = .direct, limits: ProtocolLimits = .standard,
        directory: TemporaryDirectory? = nil, clock: ManualClock = ManualClock()
    ) throws {
        self.directory = try directory ?? TemporaryDirectory(prefix: "notesfs-server")
        self.factory = factory
        self.clock = clock
        store = try factory.make(self.directory)
        server = SyncServer(
            store: store, configuration: SyncServer.Configuration(limits: limits, tombstoneRetentionSeconds: 86_400),
            clock: clock.clock)
        // As `notesfs serve` does: polls at a known head read nothing.
        if let reporter = store as? any CommitReporting { server.followCommits(of: reporter) }
        transport = try transportKind.make(server)
    }

    /// Stops the server and closes the store; keeps the directory when `keepData`.
    func close(keepData: Bool = false) async {
        server.beginShutdown()
        await transport.stop()
        await store.close()
        if !keepData { directory.remove() }
    }

    /// A new account and its bearer token text.
    func account(_ name: String = "user-\(UUID().uuidString.prefix(8))") async throws -> String {
        try await AccountManager(store: store, clock: clock.clock).add(name: name).token.text
    }

    func send(
        _ method: String, _ path: String, token: String?, query: [String: String] = [:], body: Data = Data(),
        headers: [String: String] = [:]
    ) async throws -> Reply {
        try await transport.send(
            ServerRequest(
                method: method, path: path, query: query, authorization: token.map { "Bearer \($0)" }, body: body),
            headers: headers)
    }

    func pushRaw(
        _ changes: [Change], token: String, cursor: SyncCursor? = nil, device: DeviceID? = nil, deviceName: String? = nil
    ) async throws -> Reply {
        let body = try WireCoding.encoder().encode(
            PushRequest(device: device ?? self.device, deviceName: deviceName, changes: changes, cursor: cursor))
        return try await send("POST", Endpoint.push, token: token, body: body)
    }

    /// Pushes and expects a 200 with one result per change.
    func push(_ changes: [Change], token: String) async throws -> [ChangeResult] {
        let reply = try await pushRaw(changes, token: token)
        guard reply.status == 200 else { throw HarnessError("push answered \(reply.status): \(reply.text)") }
        let results = try reply.decode(PushResponse.self).results
        guard results.count == changes.count else { throw HarnessError("\(results.count) results for \(changes.count) changes") }
        return results
    }

    func push(_ change: Change, token: String) async throws -> ChangeResult {
        try await push([change], token: token)[0]
    }

    func changesRaw(
        token: String, since: SyncCursor? = nil, limit: Int? = nil, wait: Int? = nil, device: DeviceID? = nil
    ) async throws -> Reply {
        var query: [String: String] = [:]
        if let device { query[Endpoint.Query.device] = device.description }
        if let since { query[Endpoint.Query.since] = since.rawValue }
        if let limit { query[Endpoint.Query.limit] = String(limit) }
        if let wait { query[Endpoint.Query.wait] = String(wait) }
        return try await send("GET", Endpoint.changes, token: token, query: query)
    }

    func changes(
        token: String, since: SyncCursor? = nil, limit: Int? = nil, wait: Int? = nil, device: DeviceID? = nil
    ) async throws -> ChangesPage {
        let reply = try await changesRaw(token: token, since: since, limit: limit, wait: wait, device: device)
        guard reply.status == 200 else { throw HarnessError("changes answered \(reply.status): \(reply.text)") }
        return try reply.decode(ChangesPage.self)
    }

    /// Every row of the feed from `since`, page by page.
    func drain(token: String, since: SyncCursor? = nil, limit: Int? = nil) async throws -> (rows: [EntityVersion], cursor: SyncCursor) {
        var rows: [EntityVersion] = []
        var cursor = since
        var pages = 0
        while true {
            let page = try await changes(token: token, since: cursor, limit: limit)
            rows += page.changes
            cursor = page.nextCursor
            pages += 1
            if !page.hasMore || pages > 10_000 { return (rows, page.nextCursor) }
        }
    }

    func index(token: String, after: String? = nil, limit: Int? = nil) async throws -> IndexPage {
        var query: [String: String] = [:]
        if let after { query[Endpoint.Query.after] = after }
        if let limit { query[Endpoint.Query.limit] = String(limit) }
        let reply = try await send("GET", Endpoint.index, token: token, query: query)
        guard reply.status == 200 else { throw HarnessError("index answered \(reply.status): \(reply.text)") }
        return try reply.decode(IndexPage.self)
    }
}

/// Small builders for test changes.
enum Make {
    static func note(
        _ id: NoteID = NoteID(), title: String = "todo.md", body: String = "milk\n", folder: FolderID? = nil,
        base: Int64? = nil, changeId: ChangeID = ChangeID()
    ) -> Change {
        .putNote(id, NotePayload(title: title, bodyBytes: Data(body.utf8), folderId: folder), baseVersion: base, changeId: changeId)
    }

    static func folder(
        _ id: FolderID = FolderID(), name: String = "Work", parent: FolderID? = nil, base: Int64? = nil
    ) -> Change {
        .putFolder(id, FolderPayload(name: name, parentId: parent), baseVersion: base)
    }

    static func json(_ text: String) -> Data { Data(text.utf8) }
}

extension ChangeResult {
    var appliedVersion: Int64? {
        if case .applied(let version) = outcome { return version }
        return nil
    }

    var conflictCurrent: EntityVersion?? {
        if case .conflict(let current) = outcome { return .some(current) }
        return .none
    }

    var refusalReason: RefusalReason? {
        if case .refused(let reason, _) = outcome { return reason }
        return nil
    }
}
