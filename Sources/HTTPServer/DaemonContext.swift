import CMicroHTTPD
import Foundation
import Synchronization
import SyncProtocol
import SyncServer

/// What the C callbacks reach through libmicrohttpd's `cls` pointer: the
/// handler, the limits, the log and the count of open requests. Kept alive by
/// `HTTPServer` until the daemon has stopped.
final class DaemonContext: Sendable {
    let server: SyncServer
    let logger: any ServerLogger
    let requestBodyBytesMax: Int
    let gzipMinimumBytes: Int
    /// More query parameters than this get 400 (the routes take at most four).
    let queryParametersMax: Int
    let deadlines: ConnectionDeadlines
    /// New connections per address (nil: no limit).
    let admission: ConnectionAdmission?
    /// Lines any client can cause without a live token, bounded per interval.
    let refusals: RefusalLog
    /// The 401 every refused token gets, made once.
    let unauthorized: SharedResponse
    private let open = Atomic<Int>(0)
    /// Connections suspended while a handler runs. libmicrohttpd aborts the
    /// process if one is still suspended when the daemon stops.
    private let handling = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)

    init(
        server: SyncServer, logger: any ServerLogger, requestBodyBytesMax: Int, gzipMinimumBytes: Int,
        queryParametersMax: Int, deadlines: ConnectionDeadlines, admission: ConnectionAdmission?
    ) throws(HTTPServerError) {
        self.server = server
        self.logger = logger
        self.requestBodyBytesMax = requestBodyBytesMax
        self.gzipMinimumBytes = gzipMinimumBytes
        self.queryParametersMax = queryParametersMax
        self.deadlines = deadlines
        self.admission = admission
        refusals = RefusalLog(logger: logger)
        var response = ServerError.unauthorized.response
        response.logNote = ErrorCode.unauthorized.rawValue
        guard let made = Self.makeResponse(response, body: response.body, compressed: false, varies: false, closing: true)
        else { throw .cannotStart("out of memory") }
        unauthorized = SharedResponse(made, prototype: response)
    }

    /// Whether a new connection from `client` is served; one that is not is
    /// only counted (it is closed at accept).
    func admit(_ client: ClientAddress) -> Bool {
        guard let admission, !admission.admit(client) else { return true }
        refusals.count(.closedAtAccept, from: client)
        return false
    }

    /// Requests begun and not yet completed.
    var openRequests: Int { open.load(ordering: .acquiring) }

    func requestBegan() { open.add(1, ordering: .relaxed) }
    func requestEnded() { open.subtract(1, ordering: .releasing) }

    /// Handlers still running (their connections suspended).
    var handlersRunning: Int { handling.load(ordering: .sequentiallyConsistent) }

    /// From now on requests are answered 503 instead of being handed to a
    /// handler, so `handlersRunning` can only fall.
    func beginStopping() { stopping.store(true, ordering: .sequentiallyConsistent) }

    /// Claims a handler for a request about to be suspended; false once
    /// stopping began. Both sides use sequentially consistent order, so
    /// either the stopper sees this handler or this call sees the stop.
    func claimHandler() -> Bool {
        handling.add(1, ordering: .sequentiallyConsistent)
        guard !stopping.load(ordering: .sequentiallyConsistent) else {
            handling.subtract(1, ordering: .sequentiallyConsistent)
            return false
        }
        return true
    }

    /// Runs the handler off libmicrohttpd's thread; the connection stays
    /// suspended (holding no worker) until the response is ready. Call
    /// only after `claimHandler()` returned true.
    func handle(_ request: ServerRequest, for context: RequestContext, resuming connection: ConnectionHandle) {
        Task {
            let response = await server.handle(request)
            context.finish(response, resuming: connection)
            handling.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Decides what to do with a request whose head just arrived, before any
    /// body byte is read: refuse it (too many query parameters, ambiguous
    /// framing, a body where none belongs, too large), check its token first
    /// (any request with a body: the connection is suspended meanwhile, so
    /// nothing is read or inflated for a client without a live token), or
    /// go on (no body: the handler checks the token).
    func begin(
        _ request: RequestContext, head: RequestHead, queryParameterCount: Int, on connection: OpaquePointer
    ) -> MHD_Result {
        deadlines.enter(.working, connection)
        if queryParameterCount > queryParametersMax {
            let error = ServerError.badRequest(
                "the request has \(queryParameterCount) query parameters; at most \(queryParametersMax)")
            return queue(
                refusal(error, note: "too many query parameters"), for: request, on: connection, closing: true,
                beforeToken: true)
        }
        let framing: RequestHead.Framing
        switch head.framing() {
        case .success(let found): framing = found
        case .failure(let error):
            return queue(
                refusal(.badRequest(error.message), note: "ambiguous framing"), for: request, on: connection,
                closing: true, beforeToken: true)
        }
        guard framing != .none else { return .YES }
        if var refused = server.refusalOfBody(method: request.method, path: request.path) {
            refused.logNote = "body refused: \(refused.logNote)"
            return queue(refused, for: request, on: connection, closing: true, beforeToken: true)
        }
        if case .length(let length) = framing, length > requestBodyBytesMax {
            // Answer before reading the body; libmicrohttpd then closes the connection.
            return queue(payloadTooLarge(), for: request, on: connection, closing: true, beforeToken: true)
        }
        // A token of the wrong shape needs no lookup: refused at once, before
        // the client has pushed much of its body into the socket buffers.
        if AccessToken.fromAuthorization(request.authorization) == nil {
            return queue(unauthorized.prototype, for: request, on: connection, closing: true, beforeToken: true)
        }
        guard claimHandler() else {
            return queue(stoppingResponse(), for: request, on: connection)
        }
        request.beginCheckingCredentials()
        MHD_suspend_connection(connection)
        let handle = ConnectionHandle(pointer: connection)
        server.checkCredentials(authorization: request.authorization) { [self] check in
            request.credentialsChecked(check, resuming: handle)
            handling.subtract(1, ordering: .sequentiallyConsistent)
        }
        return .YES
    }

    /// Hands a received request to its handler with the connection
    /// suspended, or queues the answer once it is ready (the call after the
    /// resume).
    func dispatch(_ request: RequestContext, on connection: OpaquePointer) -> MHD_Result {
        let next = request.advance(bodyLimit: requestBodyBytesMax)
        if let response = next.response {
            return queue(response, for: request, on: connection)
        }
        guard let serverRequest = next.request else { return .YES }
        guard claimHandler() else {
            return queue(stoppingResponse(), for: request, on: connection)
        }
        deadlines.enter(.working, connection)
        MHD_suspend_connection(connection)
        handle(serverRequest, for: request, resuming: ConnectionHandle(pointer: connection))
        return .YES
    }

    private func refusal(_ error: ServerError, note: String) -> ServerResponse {
        var response = error.response
        response.logNote = note
        return response
    }

    func stoppingResponse() -> ServerResponse {
        var response = ServerError.unavailable("the server is stopping; retry in a moment").response
        response.headers.append(("Connection", "close"))
        response.logNote = "stopping"
        return response
    }

    func payloadTooLarge() -> ServerResponse {
        var response = ServerError.payloadTooLarge("the body is larger than \(requestBodyBytesMax) bytes").response
        response.logNote = ErrorCode.payloadTooLarge.rawValue
        return response
    }

    /// Sends `response`, gzip-compressed when the client accepts it and it is
    /// large enough, and writes the request's log line: within the refusal
    /// log's budget for answers any client can get without a live token
    /// (`beforeToken`, and every 401, 404 and 405).
    /// A 401, and a refusal sent with `closing`, close the connection after
    /// the answer (a body sent with it is never read).
    func queue(
        _ response: ServerResponse, for request: RequestContext, on connection: OpaquePointer, closing: Bool = false,
        beforeToken: Bool = false
    ) -> MHD_Result {
        var body = response.body
        let result: MHD_Result
        if unauthorized.answers(response) && body.count <= gzipMinimumBytes {
            // Never compressed and never varies, as the answer made here would not.
            result = MHD_queue_response(connection, UInt32(response.status), unauthorized.pointer)
        } else {
            var compressed = false
            if request.acceptsGzip, let gzipped = Gzip.compressedForWire(body, minimumBytes: gzipMinimumBytes) {
                body = gzipped
                compressed = true
            }
            // Only a GET answer could be cached; a POST answer never is, so it needs no Vary.
            let varies = request.method == "GET" && (body.count > gzipMinimumBytes || compressed)
            guard
                let mhdResponse = Self.makeResponse(
                    response, body: body, compressed: compressed, varies: varies,
                    closing: closing || response.status == 401)
            else { return .NO }
            defer { MHD_destroy_response(mhdResponse) }
            result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        }
        let line = { [body] in
            let elapsed = ContinuousClock.now - request.started
            // Tenths of a millisecond, rounded, without Foundation's formatter.
            let hundredths =
                elapsed.components.seconds * 100_000 + elapsed.components.attoseconds / 10_000_000_000_000
            let tenths = (hundredths + 5) / 10
            return "\(request.clientText) \(LogText.escaped(request.method, limit: 20)) "
                + "\(LogText.escaped(request.path, limit: 100)) \(response.status) \(body.count)B "
                + "\(tenths / 10).\(tenths % 10)ms"
                + (response.logNote.isEmpty ? "" : " \(LogText.escaped(response.logNote, limit: 300, keepingSpaces: true))")
        }
        if beforeToken || response.status == 401 || response.status == 404 || response.status == 405 {
            refusals.log(.answered(response.status), from: request.client, line)
        } else {
            logger.log(line())
        }
        return result
    }

    /// A libmicrohttpd response with `response`'s headers and `body`.
    static func makeResponse(
        _ response: ServerResponse, body: Data, compressed: Bool, varies: Bool, closing: Bool
    ) -> OpaquePointer? {
        let created: OpaquePointer? = body.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse = created else { return nil }
        _ = MHD_add_response_header(mhdResponse, "Content-Type", response.contentType)
        if compressed { _ = MHD_add_response_header(mhdResponse, "Content-Encoding", "gzip") }
        if varies { _ = MHD_add_response_header(mhdResponse, "Vary", "Accept-Encoding") }
        for (name, value) in response.headers { _ = MHD_add_response_header(mhdResponse, name, value) }
        if closing,
            !response.headers.contains(where: { $0.0.caseInsensitiveCompare("Connection") == .orderedSame })
        {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return mhdResponse
    }

    func requestAborted(_ request: RequestContext, reason: String, stillHandling: Bool) {
        refusals.log(.endedEarly, from: request.client) {
            "\(request.clientText) \(LogText.escaped(request.method, limit: 20)) \(LogText.escaped(request.path, limit: 100)) "
                + "closed before an answer (\(reason))" + (stillHandling ? ", handler still running" : "")
        }
    }

    /// A request that ended before its head was complete or that
    /// libmicrohttpd refused by itself (its message precedes this line).
    func requestLineAborted(_ slot: RequestSlot, reason: String) {
        refusals.log(.endedEarly, from: slot.client) {
            "\(slot.client?.description ?? "-") - \(slot.path) ended before the handler saw it (\(reason))"
        }
    }
}

/// A libmicrohttpd response made once and queued for many requests
/// (libmicrohttpd counts its references), so a flood of refused tokens
/// costs no encoding or building of answers.
///
/// `@unchecked Sendable`: the response is never changed after it is made,
/// and libmicrohttpd may queue one response on many connections at once.
final class SharedResponse: @unchecked Sendable {
    let pointer: OpaquePointer
    /// What it answers, as `SyncServer` would have made it.
    let prototype: ServerResponse

    init(_ pointer: OpaquePointer, prototype: ServerResponse) {
        self.pointer = pointer
        self.prototype = prototype
    }

    deinit { MHD_destroy_response(pointer) }

    /// Whether `response` is the same answer, byte for byte on the wire.
    func answers(_ response: ServerResponse) -> Bool {
        response.status == prototype.status && response.body == prototype.body
            && response.contentType == prototype.contentType
            && response.headers.map { "\($0.0): \($0.1)" } == prototype.headers.map { "\($0.0): \($0.1)" }
    }
}
