import Foundation
import HTTPServer
import SyncProtocol
import SyncServer
import Synchronization

/// One blocking HTTP/1.1 connection to 127.0.0.1, speaking just enough of
/// the protocol to test the server byte by byte: keep-alive, Content-Length
/// bodies, and requests written in pieces (slow clients).
final class RawHTTPConnection {
    let socket: Int32
    private var buffer = Data()

    init(port: UInt16, receiveTimeoutSeconds: Int = 60) throws {
        socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw HarnessError("socket() failed: \(errno)") }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // No close here: a class whose stored properties are all set runs
        // `deinit` when its init throws, and that closes the socket.
        guard result == 0 else { throw HarnessError("connect() failed: \(errno)") }
    }

    deinit { Foundation.close(socket) }

    /// The bytes of a request.
    static func requestBytes(
        method: String, target: String, headers: [String: String], body: Data
    ) -> Data {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Data(head.utf8) + body
    }

    /// Writes all of `data`; false when the peer has gone.
    @discardableResult
    func write(_ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let sent = Foundation.send(
                    socket, buffer.baseAddress!.advanced(by: offset), buffer.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// Reads one response; throws on a closed connection or a timeout.
    func readResponse() throws -> Reply {
        let separator = Data("\r\n\r\n".utf8)
        var headerEnd: Range<Data.Index>?
        while true {
            headerEnd = buffer.range(of: separator)
            if headerEnd != nil { break }
            try fill()
        }
        guard let headerEnd else { throw HarnessError("no header end") }
        let headText = String(decoding: buffer[buffer.startIndex..<headerEnd.lowerBound], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw HarnessError("bad status line: \(headText.prefix(80))")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        buffer = Data(buffer[headerEnd.upperBound...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { try fill() }
        var body = Data(buffer.prefix(length))
        buffer = Data(buffer.dropFirst(length))
        if headers["content-encoding"] == "gzip" {
            guard let plain = try? Gzip.decompress(body) else { throw HarnessError("bad gzip body") }
            body = plain
        }
        return Reply(status: status, headers: headers, body: body)
    }

    /// True when the server has closed the connection (a read returns 0 or fails).
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        let count = recv(socket, &byte, 1, 0)
        return count <= 0
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(socket, &chunk, chunk.count, 0)
        guard count > 0 else { throw HarnessError("connection closed or timed out (errno \(errno))") }
        buffer.append(contentsOf: chunk[0..<count])
    }
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
                    if box.connection.write(bytes), let first = try? box.connection.readResponse() {
                        reply = first
                    } else {
                        // A kept-alive connection the server closed: retry once on a new one.
                        let fresh = ConnectionBox(try RawHTTPConnection(port: port))
                        guard fresh.connection.write(bytes) else { throw HarnessError("cannot write request") }
                        reply = try fresh.connection.readResponse()
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

/// Runs blocking work on a new thread.
func blockingThread(_ work: @escaping @Sendable () -> Void) {
    let thread = Thread(block: work)
    thread.stackSize = 1 << 20
    thread.start()
}
