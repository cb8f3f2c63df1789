import Foundation
import NotesModel
import SyncEngine
import SyncProtocol
import SyncServer
import Synchronization

/// What happens to one request on its way to the server and back.
public enum Fault: Sendable, Equatable {
    /// Delivered and answered normally.
    case none
    /// Lost before the server saw it.
    case loseRequest
    /// The server applied it, but the reply was lost.
    case loseReply
    /// Delivered twice (a retry racing the original); the second answer is returned.
    case duplicate
    /// The server answers 500 without doing anything.
    case serverError
    /// The reply is garbage.
    case malformedReply
    /// The connection was reset before any answer (nothing reached the server).
    case connectionReset
    /// The server's certificate is not trusted (nothing reached the server).
    case untrustedCertificate
    /// Something in front of the server (a proxy, a wrong URL) answers with
    /// this status and a page that is not the server's JSON; nothing reached the server.
    case status(Int)
    /// The server applied the request, but its reply was cut after `bytes` bytes.
    case cutReply(bytes: Int)
}

/// A `SyncTransport` that calls the real `SyncServer` in this process, with
/// faults injected per request. Only the network is fake.
public final class InProcessTransport: SyncTransport {
    public let server: SyncServer
    private let token: String
    private let faults: Mutex<[Fault]>
    private let requests = Atomic<Int>(0)
    /// Decides a fault for requests not covered by `queueFaults`; nil = none.
    private let policy: (@Sendable (_ path: String) -> Fault)?

    public init(server: SyncServer, token: String, policy: (@Sendable (_ path: String) -> Fault)? = nil) {
        self.server = server
        self.token = token
        self.faults = Mutex([])
        self.policy = policy
    }

    /// Faults for the next requests, in order.
    public func queueFaults(_ next: [Fault]) {
        faults.withLock { $0.append(contentsOf: next) }
    }

    /// Requests sent so far.
    public var requestCount: Int { requests.load(ordering: .relaxed) }

    private func nextFault(_ path: String) -> Fault {
        let queued = faults.withLock { queue -> Fault? in queue.isEmpty ? nil : queue.removeFirst() }
        return queued ?? policy?(path) ?? .none
    }

    private func send(method: String, path: String, query: [String: String] = [:], body: Data = Data())
        async throws(TransportError) -> (Int, Data)
    {
        requests.add(1, ordering: .relaxed)
        let request = ServerRequest(
            method: method, path: path, query: query, authorization: "Bearer \(token)", body: body)
        switch nextFault(path) {
        case .none:
            let response = await server.handle(request)
            return (response.status, response.body)
        case .loseRequest:
            throw .offline("request lost")
        case .loseReply:
            _ = await server.handle(request)
            throw .offline("reply lost")
        case .duplicate:
            _ = await server.handle(request)
            let response = await server.handle(request)
            return (response.status, response.body)
        case .serverError:
            return (500, Data(#"{"error":{"code":"internal","message":"injected"}}"#.utf8))
        case .malformedReply:
            _ = await server.handle(request)
            return (200, Data("{not json".utf8))
        case .connectionReset:
            throw .offline("connection lost (Connection reset by peer)")
        case .untrustedCertificate:
            throw .untrustedCertificate("SSL certificate problem: self-signed certificate (injected)")
        case .status(let status):
            return (status, Data("<html><body><h1>\(status)</h1>injected by a proxy</body></html>".utf8))
        case .cutReply(let bytes):
            let response = await server.handle(request)
            return (response.status, response.body.prefix(bytes))
        }
    }

    public func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
        let (status, body) = try await send(method: "POST", path: Endpoint.push, body: TransportDecoding.encode(request))
        return try TransportDecoding.decode(PushResponse.self, status: status, body: body)
    }

    public func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
        var query = [Endpoint.Query.limit: String(limit), Endpoint.Query.wait: String(waitSeconds)]
        if let since { query[Endpoint.Query.since] = since.rawValue }
        let (status, body) = try await send(method: "GET", path: Endpoint.changes, query: query)
        return try TransportDecoding.decode(ChangesPage.self, status: status, body: body)
    }

    public func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage {
        var query = [Endpoint.Query.limit: String(limit)]
        if let after { query[Endpoint.Query.after] = after }
        let (status, body) = try await send(method: "GET", path: Endpoint.index, query: query)
        return try TransportDecoding.decode(IndexPage.self, status: status, body: body)
    }

    public func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse {
        let (status, body) = try await send(method: "POST", path: Endpoint.fetch, body: TransportDecoding.encode(request))
        return try TransportDecoding.decode(FetchResponse.self, status: status, body: body)
    }
}
