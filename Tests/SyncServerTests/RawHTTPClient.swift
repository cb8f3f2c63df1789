import Foundation
import HTTPServer
import LoopbackHTTP
import SyncProtocol
import SyncServer
import Synchronization
import TestSupport

extension Reply {
    /// A reply read off a raw connection, its body gunzipped when the server compressed it.
    init(_ response: RawHTTPResponse) throws {
        var body = response.body
        if response.headers["content-encoding"] == "gzip" {
            guard let plain = try? Gzip.decompress(body) else { throw HarnessError("bad gzip body") }
            body = plain
        }
        self.init(status: response.status, headers: response.headers, body: body)
    }
}

extension RawHTTPConnection {
    /// Reads one response as a `Reply`; throws on a closed connection or a timeout.
    func readReply() throws -> Reply { try Reply(readResponse()) }
}

/// Percent-encodes a query.
func queryString(_ query: [String: String]) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    let parts = query.sorted { $0.key < $1.key }.map { key, value in
        "\(key)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
    }
    return parts.isEmpty ? "" : "?" + parts.joined(separator: "&")
}

/// Requests through a real libmicrohttpd server on an ephemeral loopback port.
/// Blocking socket calls run on threads of their own: never on the
/// cooperative pool or on dispatch's worker threads, which the server's
/// handlers and store queues share in this process.
final class HTTPTransport: Transport {
    let http: HTTPServer
    /// Idle keep-alive connections. `@unchecked`-free: guarded by a Mutex of Sendable boxes.
    private let idle = Mutex<[ConnectionBox]>([])

    /// `@unchecked Sendable`: a box is used by one request at a time (taken
    /// out of `idle` before use and put back after).
    final class ConnectionBox: @unchecked Sendable {
        let connection: RawHTTPConnection
        init(_ connection: RawHTTPConnection) { self.connection = connection }
    }

    init(server: SyncServer, logger: any ServerLogger = SilentLogger(), configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var configuration = HTTPServer.Configuration(
            address: ListenAddress(host: "127.0.0.1", port: 0),
            requestBodyBytesMax: server.configuration.limits.requestBodyBytesMax)
        configure(&configuration)
        http = try HTTPServer(server: server, configuration: configuration, logger: logger)
    }

    var port: UInt16 { http.port }

    func send(_ request: ServerRequest, headers: [String: String]) async throws -> Reply {
        var allHeaders = headers
        if let authorization = request.authorization { allHeaders["Authorization"] = authorization }
        let bytes = RawHTTPConnection.requestBytes(
            method: request.method, target: request.path + queryString(request.query), headers: allHeaders,
            body: request.body)
        let port = http.port
        let reused = idle.withLock { $0.popLast() }
        return try await withCheckedThrowingContinuation { continuation in
            blockingThread { [self] in
                do {
                    let box = try reused ?? ConnectionBox(RawHTTPConnection(port: port))
                    var reply: Reply
                    if box.connection.write(bytes), let first = try? box.connection.readReply() {
                        reply = first
                    } else {
                        // A kept-alive connection the server closed: retry once on a new one.
                        let fresh = ConnectionBox(try RawHTTPConnection(port: port))
                        guard fresh.connection.write(bytes) else { throw HarnessError("cannot write request") }
                        reply = try fresh.connection.readReply()
                        idle.withLock { $0.append(fresh) }
                        continuation.resume(returning: reply)
                        return
                    }
                    if reply.headers["connection"]?.lowercased() != "close" {
                        idle.withLock { $0.append(box) }
                    }
                    continuation.resume(returning: reply)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    func stop() async {
        idle.withLock { $0.removeAll() }
        let http = http
        await withCheckedContinuation { continuation in
            blockingThread {
                http.stop(graceSeconds: 5)
                continuation.resume()
            }
        }
    }
}
