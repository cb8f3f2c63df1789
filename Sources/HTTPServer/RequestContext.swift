import CMicroHTTPD
import Foundation
import Synchronization
import SyncServer

/// A libmicrohttpd connection handle that may be resumed from another thread.
///
/// `@unchecked Sendable`: libmicrohttpd allows `MHD_resume_connection` from any
/// thread; the pointer is only used for that, under `RequestContext.state`'s
/// lock, and only while the connection is open (see `RequestContext.resume`).
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Everything about one request between libmicrohttpd's callbacks: what was
/// received, and the response once the handler made it. Owned through
/// `con_cls` (retained on the first callback, released on completion).
final class RequestContext: Sendable {
    enum Phase: Sendable {
        /// Headers and body are arriving.
        case receiving
        /// The handler runs; the connection is suspended.
        case handling
        /// The response is ready to queue.
        case ready(ServerResponse)
        /// The response was queued.
        case answered
    }

    private struct State: Sendable {
        var phase: Phase = .receiving
        var body = Data()
        /// True once libmicrohttpd has reported the request complete; the
        /// connection pointer must not be used after that.
        var closed = false
    }

    let method: String
    let path: String
    let query: [String: String]
    let authorization: String?
    let acceptsGzip: Bool
    let declaredLength: Int?
    let client: String
    let started = ContinuousClock.now
    private let state = Mutex(State())

    init(
        method: String, path: String, query: [String: String], authorization: String?, acceptsGzip: Bool,
        declaredLength: Int?, client: String
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.acceptsGzip = acceptsGzip
        self.declaredLength = declaredLength
        self.client = client
    }

    /// Appends body bytes; false when the body would pass `limit`.
    func append(_ bytes: UnsafeRawBufferPointer, limit: Int) -> Bool {
        state.withLock { state in
            guard state.body.count + bytes.count <= limit else { return false }
            state.body.append(contentsOf: bytes)
            return true
        }
    }

    /// Moves to `handling` and returns the request to hand over, or returns
    /// the response to queue if one is ready.
    func advance() -> (request: ServerRequest?, response: ServerResponse?) {
        state.withLock { state in
            switch state.phase {
            case .receiving:
                state.phase = .handling
                let request = ServerRequest(
                    method: method, path: path, query: query, authorization: authorization, body: state.body)
                state.body = Data()
                return (request, nil)
            case .ready(let response):
                state.phase = .answered
                return (nil, response)
            case .handling, .answered:
                return (nil, nil)
            }
        }
    }

    /// Stores the response and resumes the suspended connection, unless it
    /// was closed meanwhile.
    func finish(_ response: ServerResponse, resuming connection: ConnectionHandle) {
        state.withLock { state in
            state.phase = .ready(response)
            if !state.closed { MHD_resume_connection(connection.pointer) }
        }
    }

    /// Called from libmicrohttpd's completion callback.
    func markClosed() -> Bool {
        state.withLock { state in
            state.closed = true
            if case .handling = state.phase { return true }
            return false
        }
    }
}
