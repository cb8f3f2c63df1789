import Foundation

/// A blocking HTTP/1.1 keep-alive connection to a loopback port: the least
/// client that can drive the server without being the bottleneck.
final class RawConnection {
    private let socket: Int32
    private var buffer = Data()

    init(port: UInt16) throws {
        socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw LoadError("socket() failed: \(errno)") }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
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
        // No close here: `deinit` runs when an init throws after every stored
        // property is set, and it closes the socket.
        guard result == 0 else { throw LoadError("connect() to port \(port) failed: \(errno)") }
    }

    deinit { Foundation.close(socket) }

    func send(method: String, target: String, token: String, body: Data = Data()) throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
        if method == "POST" { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Data(head.utf8) + body
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                guard let base = raw.baseAddress else { return }
                let sent = Foundation.send(socket, base.advanced(by: offset), raw.count - offset, Int32(MSG_NOSIGNAL))
                guard sent > 0 else { throw LoadError("send failed: \(errno)") }
                offset += sent
            }
        }
    }

    /// Reads one response: status and body.
    func receive() throws -> (status: Int, body: Data) {
        let separator = Data("\r\n\r\n".utf8)
        var end = buffer.range(of: separator)
        while end == nil {
            try fill()
            end = buffer.range(of: separator)
        }
        guard let headerEnd = end else { throw LoadError("no header end") }
        let head = String(decoding: buffer[buffer.startIndex..<headerEnd.lowerBound], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2, let status = Int(parts[1]) else { throw LoadError("bad status line") }
        var length = 0
        for line in lines.dropFirst() where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        buffer = Data(buffer[headerEnd.upperBound...])
        while buffer.count < length { try fill() }
        let body = Data(buffer.prefix(length))
        buffer = Data(buffer.dropFirst(length))
        return (status, body)
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(socket, &chunk, chunk.count, 0)
        guard count > 0 else { throw LoadError("connection closed or timed out") }
        buffer.append(contentsOf: chunk[0..<count])
    }
}

struct LoadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
