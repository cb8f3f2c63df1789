import Foundation

/// Where the server listens: an IPv4 or bracketed IPv6 literal and a port
/// (`127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:0`); `localhost` means 127.0.0.1.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port`; nil for anything else.
    public init?(_ text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard let port = UInt16(portPart), !hostPart.isEmpty else { return nil }
        let host = hostPart == "localhost" ? "127.0.0.1" : String(hostPart)
        guard Self.socketAddress(host: host, port: port) != nil else { return nil }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The address as `sockaddr` bytes (a `sockaddr_in` or `sockaddr_in6`).
    var socketAddressBytes: [UInt8]? { Self.socketAddress(host: host, port: port) }

    static func socketAddress(host: String, port: UInt16) -> [UInt8]? {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            return withUnsafeBytes(of: v4) { Array($0) }
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            return withUnsafeBytes(of: v6) { Array($0) }
        }
        return nil
    }
}
