import Foundation
import SyncProtocol

/// A request as the HTTP layer hands it over: no HTTP library types.
public struct ServerRequest: Sendable {
    public var method: String
    /// The path without the query string.
    public var path: String
    /// Query parameters; a repeated name keeps its last value.
    public var query: [String: String]
    /// The `Authorization` header, if any.
    public var authorization: String?
    public var body: Data
    /// The token check made for this request before its body was read, if
    /// any (`SyncServer.checkCredentials`).
    public var checkedCredentials: CheckedCredentials?

    public init(
        method: String, path: String, query: [String: String] = [:], authorization: String? = nil,
        body: Data = Data(), checkedCredentials: CheckedCredentials? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.body = body
        self.checkedCredentials = checkedCredentials
    }
}

/// A response for the HTTP layer to send.
public struct ServerResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var headers: [(String, String)]
    public var body: Data
    /// Words for the request log (account, counts); never note text.
    public var logNote: String

    public init(
        status: Int, contentType: String, body: Data, headers: [(String, String)] = [], logNote: String = ""
    ) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
        self.logNote = logNote
    }

    /// A JSON response of an encodable value.
    public static func json<T: Encodable>(status: Int = 200, _ value: T) -> ServerResponse {
        do {
            return ServerResponse(
                status: status, contentType: "application/json", body: try WireCoding.encoder().encode(value))
        } catch {
            return ServerResponse(
                status: 500, contentType: "application/json",
                body: Data(#"{"error":{"code":"internal","message":"cannot encode the response"}}"#.utf8))
        }
    }
}

/// Where the server writes its log lines. Passed in; never global.
public protocol ServerLogger: Sendable {
    func log(_ line: String)
}

/// Writes each line to standard error.
public struct StandardErrorLogger: ServerLogger {
    public init() {}
    public func log(_ line: String) {
        // One write(2) per line, so lines from several threads never interleave.
        var text = line + "\n"
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(STDERR_FILENO, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}

/// Drops every line.
public struct SilentLogger: ServerLogger {
    public init() {}
    public func log(_ line: String) {}
}

/// The server's idea of now, passed in so tests can move time.
public struct ServerClock: Sendable {
    public var now: @Sendable () -> Date
    public init(now: @escaping @Sendable () -> Date) { self.now = now }
    /// The system clock.
    public static let system = ServerClock { Date() }
}
