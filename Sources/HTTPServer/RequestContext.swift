import CMicroHTTPD
import Foundation
import Synchronization
import SyncProtocol
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

    /// Where the token check of a request with a body stands.
    enum Credentials: Sendable {
        /// Not needed (no body) or not begun.
        case unchecked
        /// The check runs; the connection is suspended before its body.
        case checking
        /// The token is live: the body may be read.
        case accepted
        /// The answer instead of reading the body.
        case refused(ServerResponse)
        /// The outcome was taken by libmicrohttpd's call after the resume.
        case settled
    }

    private struct State: Sendable {
        var phase: Phase = .receiving
        var credentials: Credentials = .unchecked
        var body = Data()
        /// The live token found before the body, for the handler.
        var checked: CheckedCredentials?
        /// True once libmicrohttpd has reported the request complete; the
        /// connection pointer must not be used after that.
        var closed = false
    }

    let method: String
    let path: String
    let query: [String: String]
    let authorization: String?
    let acceptsGzip: Bool
    /// The request body's `Content-Encoding`, when it has one.
    let contentEncoding: String?
    let declaredLength: Int?
    /// The client's address (nil when libmicrohttpd could not tell).
    let client: ClientAddress?
    let started = ContinuousClock.now
    private let state = Mutex(State())

    init(
        method: String, path: String, query: [String: String], authorization: String?, acceptsGzip: Bool,
        contentEncoding: String? = nil, declaredLength: Int?, client: ClientAddress?
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.acceptsGzip = acceptsGzip
        self.contentEncoding = contentEncoding
        self.declaredLength = declaredLength
        self.client = client
    }

    /// The client's address as the log shows it.
    var clientText: String { client?.description ?? "-" }

    /// Appends body bytes; false when the body would pass `limit`.
    func append(_ bytes: UnsafeRawBufferPointer, limit: Int) -> Bool {
        state.withLock { state in
            guard state.body.count + bytes.count <= limit else { return false }
            state.body.append(contentsOf: bytes)
            return true
        }
    }

    /// Moves to `handling` and returns the request to hand over, or returns
    /// the response to queue if one is ready (or the body cannot be read: a
    /// gzip body that is invalid or inflates past `bodyLimit`).
    func advance(bodyLimit: Int) -> (request: ServerRequest?, response: ServerResponse?) {
        state.withLock { state in
            switch state.phase {
            case .receiving:
                let body: Data
                switch decodedBody(state.body, limit: bodyLimit) {
                case .success(let decoded): body = decoded
                case .failure(let error):
                    state.phase = .answered
                    var response = error.response
                    response.logNote = "unreadable body"
                    return (nil, response)
                }
                state.phase = .handling
                let request = ServerRequest(
                    method: method, path: path, query: query, authorization: authorization, body: body,
                    checkedCredentials: state.checked)
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

    /// The body as sent, or inflated when it came gzip-compressed (clients
    /// compress large pushes; the limit applies to the inflated size).
    private func decodedBody(_ body: Data, limit: Int) -> Result<Data, ServerError> {
        guard let encoding = contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased(),
            !encoding.isEmpty, encoding != "identity"
        else { return .success(body) }
        guard encoding == "gzip" else {
            return .failure(.badRequest("Content-Encoding \(encoding.prefix(40)) is not supported; send gzip or none"))
        }
        do {
            return .success(try Gzip.decompress(body, limit: limit))
        } catch .tooLarge(let limit) {
            return .failure(.payloadTooLarge("the body inflates to more than \(limit) bytes"))
        } catch {
            return .failure(.badRequest("the gzip body is not valid"))
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

    /// Marks the token check begun (the caller suspends the connection).
    func beginCheckingCredentials() {
        state.withLock { $0.credentials = .checking }
    }

    /// Records the check's outcome and resumes the suspended connection,
    /// unless it was closed meanwhile.
    func credentialsChecked(_ check: CredentialCheck, resuming connection: ConnectionHandle) {
        state.withLock { state in
            switch check {
            case .live(let checked):
                state.credentials = .accepted
                state.checked = checked
            case .refused(let response):
                state.credentials = .refused(response)
            }
            if !state.closed { MHD_resume_connection(connection.pointer) }
        }
    }

    /// The outcome of a finished check, once: libmicrohttpd calls the
    /// handler again right after the resume, before any body byte.
    func takeCredentialOutcome() -> Credentials? {
        state.withLock { state in
            switch state.credentials {
            case .accepted, .refused:
                let outcome = state.credentials
                state.credentials = .settled
                return outcome
            case .checking:
                return .checking
            case .unchecked, .settled:
                return nil
            }
        }
    }

    /// Called from libmicrohttpd's completion callback.
    func markClosed() -> Bool {
        state.withLock { state in
            state.closed = true
            if case .handling = state.phase { return true }
            if case .checking = state.credentials { return true }
            return false
        }
    }
}
