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
    private let open = Atomic<Int>(0)
    /// Connections suspended while a handler runs. libmicrohttpd aborts the
    /// process if one is still suspended when the daemon stops.
    private let handling = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)

    init(
        server: SyncServer, logger: any ServerLogger, requestBodyBytesMax: Int, gzipMinimumBytes: Int,
        queryParametersMax: Int, deadlines: ConnectionDeadlines
    ) {
        self.server = server
        self.logger = logger
        self.requestBodyBytesMax = requestBodyBytesMax
        self.gzipMinimumBytes = gzipMinimumBytes
        self.queryParametersMax = queryParametersMax
        self.deadlines = deadlines
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
            return queue(refusal(error, note: "too many query parameters"), for: request, on: connection, closing: true)
        }
        let framing: RequestHead.Framing
        switch head.framing() {
        case .success(let found): framing = found
        case .failure(let error):
            return queue(
                refusal(.badRequest(error.message), note: "ambiguous framing"), for: request, on: connection,
                closing: true)
        }
        guard framing != .none else { return .YES }
        if var refused = server.refusalOfBody(method: request.method, path: request.path) {
            refused.logNote = "body refused: \(refused.logNote)"
            return queue(refused, for: request, on: connection, closing: true)
        }
        if case .length(let length) = framing, length > requestBodyBytesMax {
            // Answer before reading the body; libmicrohttpd then closes the connection.
            return queue(payloadTooLarge(), for: request, on: connection, closing: true)
        }
        // A token of the wrong shape needs no lookup: refused at once, before
        // the client has pushed much of its body into the socket buffers.
        if AccessToken.fromAuthorization(request.authorization) == nil {
            var response = ServerError.unauthorized.response
            response.logNote = ErrorCode.unauthorized.rawValue
            return queue(response, for: request, on: connection, closing: true)
        }
        guard claimHandler() else {
            return queue(stoppingResponse(), for: request, on: connection)
        }
        request.beginCheckingCredentials()
        MHD_suspend_connection(connection)
        let handle = ConnectionHandle(pointer: connection)
        Task {
            let refusal = await server.checkCredentials(authorization: request.authorization)
            request.credentialsChecked(refusal, resuming: handle)
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
    /// large enough, and writes the request's log line.
    /// A 401, and a refusal sent with `closing`, close the connection after
    /// the answer (a body sent with it is never read).
    func queue(
        _ response: ServerResponse, for request: RequestContext, on connection: OpaquePointer, closing: Bool = false
    ) -> MHD_Result {
        var body = response.body
        var compressed = false
        if request.acceptsGzip, let gzipped = Gzip.compressedForWire(body, minimumBytes: gzipMinimumBytes) {
            body = gzipped
            compressed = true
        }
        let created: OpaquePointer? = body.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse = created else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        _ = MHD_add_response_header(mhdResponse, "Content-Type", response.contentType)
        if compressed { _ = MHD_add_response_header(mhdResponse, "Content-Encoding", "gzip") }
        // Only a GET answer could be cached; a POST answer never is, so it needs no Vary.
        if request.method == "GET" && (body.count > gzipMinimumBytes || compressed) {
            _ = MHD_add_response_header(mhdResponse, "Vary", "Accept-Encoding")
        }
        for (name, value) in response.headers { _ = MHD_add_response_header(mhdResponse, name, value) }
        if closing || response.status == 401,
            !response.headers.contains(where: { $0.0.caseInsensitiveCompare("Connection") == .orderedSame })
        {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        let elapsed = ContinuousClock.now - request.started
        // Tenths of a millisecond, rounded, without Foundation's formatter.
        let hundredths = elapsed.components.seconds * 100_000 + elapsed.components.attoseconds / 10_000_000_000_000
        let tenths = (hundredths + 5) / 10
        logger.log(
            "\(request.client) \(LogText.escaped(request.method, limit: 20)) \(LogText.escaped(request.path, limit: 100)) "
                + "\(response.status) \(body.count)B \(tenths / 10).\(tenths % 10)ms"
                + (response.logNote.isEmpty ? "" : " \(LogText.escaped(response.logNote, limit: 300, keepingSpaces: true))"))
        return result
    }

    func requestAborted(_ request: RequestContext, reason: String, stillHandling: Bool) {
        logger.log(
            "\(request.client) \(LogText.escaped(request.method, limit: 20)) \(LogText.escaped(request.path, limit: 100)) "
                + "closed before an answer (\(reason))" + (stillHandling ? ", handler still running" : ""))
    }

    /// A request that ended before its head was complete or that
    /// libmicrohttpd refused by itself (its message precedes this line).
    func requestLineAborted(_ slot: RequestSlot, reason: String) {
        logger.log("\(slot.client) - \(slot.path) ended before the handler saw it (\(reason))")
    }
}
