import Foundation

/// One blocking HTTP/1.1 connection to a port on 127.0.0.1, speaking just
/// enough of the protocol to drive the sync server byte by byte: keep-alive,
/// Content-Length bodies, requests written in pieces (slow clients). The tests
/// and the load generator share it, so neither is limited by a client library.
///
/// A connection is used by one thread at a time.
public final class RawHTTPConnection {
    /// The socket, for tests that set options of their own on it.
    public let socket: Int32
    private var buffer = Data()

    /// Connects from `source` (another loopback address stands for another
    /// client); a read waits at most `receiveTimeoutSeconds`.
    public init(port: UInt16, receiveTimeoutSeconds: Int = 60, source: String = "127.0.0.1") throws(RawHTTPError) {
        socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw RawHTTPError("socket() failed: errno \(errno)") }
        if source != "127.0.0.1" {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw RawHTTPError("bind() to \(source) failed: errno \(errno)") }
        }
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
        guard result == 0 else { throw RawHTTPError("connect() to port \(port) failed: errno \(errno)") }
    }

    deinit { Foundation.close(socket) }

    /// The bytes of a request (a Content-Length header for any body and for every POST).
    public static func requestBytes(
        method: String, target: String, headers: [String: String], body: Data = Data()
    ) -> Data {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Data(head.utf8) + body
    }

    /// Writes all of `data`; false when the peer has gone (or a send timeout passed).
    @discardableResult
    public func write(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                guard let base = raw.baseAddress else { return true }
                let sent = Foundation.send(socket, base.advanced(by: offset), raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// Reads one response; throws on a closed connection or a timeout. The
    /// body is as sent (still gzipped when the server compressed it).
    public func readResponse() throws(RawHTTPError) -> RawHTTPResponse {
        let separator = Data("\r\n\r\n".utf8)
        var headerEnd = buffer.range(of: separator)
        while headerEnd == nil {
            try fill()
            headerEnd = buffer.range(of: separator)
        }
        guard let headerEnd else { throw RawHTTPError("no header end") }
        let headText = String(decoding: buffer[buffer.startIndex..<headerEnd.lowerBound], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw RawHTTPError("bad status line: \(headText.prefix(80))")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        buffer = Data(buffer[headerEnd.upperBound...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { try fill() }
        let body = Data(buffer.prefix(length))
        buffer = Data(buffer.dropFirst(length))
        return RawHTTPResponse(status: status, headers: headers, body: body)
    }

    /// True when the server has closed the connection: a read returns 0 or
    /// fails. It waits up to the receive timeout for that; a connection still
    /// open then (no byte, no close) answers false.
    public func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        let count = recv(socket, &byte, 1, 0)
        if count >= 0 { return count == 0 }
        let code = errno
        return code != EAGAIN && code != EWOULDBLOCK && code != EINTR
    }

    private func fill() throws(RawHTTPError) {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(socket, &chunk, chunk.count, 0)
        guard count > 0 else { throw RawHTTPError("connection closed or timed out (errno \(errno))") }
        buffer.append(contentsOf: chunk[0..<count])
    }
}

/// One response as read off the wire; header names are lowercase.
public struct RawHTTPResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why a raw connection failed.
public struct RawHTTPError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
