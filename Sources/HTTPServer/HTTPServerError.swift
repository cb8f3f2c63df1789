/// Why the HTTP server could not start.
public enum HTTPServerError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The listen address is not an IP literal with a port.
    case badAddress(String)
    /// libmicrohttpd refused to start (port in use, no permission, bad TLS files).
    case cannotStart(String)
    /// TLS was asked for but this libmicrohttpd has no TLS support.
    case tlsUnsupported

    public var description: String {
        switch self {
        case .badAddress(let address): "cannot listen on '\(address)': use an IP address and port like 127.0.0.1:8080"
        case .cannotStart(let why): "cannot start the HTTP server: \(why)"
        case .tlsUnsupported: "this libmicrohttpd was built without TLS support"
        }
    }
}
