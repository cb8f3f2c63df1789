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
    private let open = Atomic<Int>(0)
    /// Connections suspended while a handler runs. libmicrohttpd aborts the
    /// process if one is still suspended when the daemon stops.
    private let handling = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)

    init(server: SyncServer, logger: any ServerLogger, requestBodyBytesMax: Int, gzipMinimumBytes: Int) {
        self.server = server
        self.logger = logger
        self.requestBodyBytesMax = requestBodyBytesMax
        self.gzipMinimumBytes = gzipMinimumBytes
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
    func queue(_ response: ServerResponse, for request: RequestContext, on connection: OpaquePointer) -> MHD_Result {
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
        let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        let elapsed = ContinuousClock.now - request.started
        let milliseconds =
            Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
        logger.log(
            "\(request.client) \(request.method) \(request.path.prefix(100)) \(response.status) \(body.count)B "
                + String(format: "%.1fms", milliseconds) + (response.logNote.isEmpty ? "" : " \(response.logNote)"))
        return result
    }

    func requestAborted(_ request: RequestContext, reason: String, stillHandling: Bool) {
        logger.log(
            "\(request.client) \(request.method) \(request.path.prefix(100)) closed before an answer (\(reason))"
                + (stillHandling ? ", handler still running" : ""))
    }
}
