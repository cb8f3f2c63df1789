import Foundation
import NotesModel
import SyncProtocol

/// How the engine reaches the server. The HTTP client implements it; tests and
/// the simulation put fault injection behind it.
public protocol SyncTransport: Sendable {
    /// `POST /v1/push`.
    func push(_ request: PushRequest) async throws(TransportError) -> PushResponse
    /// `GET /v1/changes`; `since` nil starts from the beginning.
    func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage
    /// `GET /v1/index`, for the resync after `410`.
    func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage
    /// `POST /v1/fetch`: full rows for the given entities.
    func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse
}

/// Why a request did not get a usable answer. Every kind fails the run,
/// which is retried with backoff: frozen changes stay frozen and nothing is
/// renamed or dropped. Only a `refused` result inside a `200` push reply
/// refuses a change (docs/sync.md "When the server says no").
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No network, connection refused or reset, or timed out: try again later.
    case offline(String)
    /// Any other 4xx: the server (or something in front of it) turned this
    /// request down. A push of several changes is split to find the one at fault.
    case rejected(status: Int, code: String, message: String)
    /// The token is missing, wrong or revoked (401).
    case unauthorized(String)
    /// 403: the server or a proxy in front of it refuses access.
    case forbidden(String)
    /// 404: nothing answers at this URL's path; `server` is the configured URL.
    case notFound(server: String, message: String)
    /// The server's TLS certificate is not trusted (or the CA file cannot be read).
    case untrustedCertificate(String)
    /// The configured server URL cannot work (malformed, unsupported scheme).
    case badURL(String)
    /// The cursor is expired, foreign or from the future (410): resync.
    case cursorGone
    /// The change id was already used with another payload (409): renew it.
    case changeIDReused(String)
    /// The server failed (5xx) or answered something unreadable: back off and retry.
    case serverBroke(String)

    /// The cause and, where the user can act, the remedy (status and logs show it).
    public var description: String {
        switch self {
        case .offline(let reason): "cannot reach the server (\(reason))"
        case .rejected(413, let code, let message):
            "the server or a proxy refused a request as too large (413 \(code): \(message)); "
                + "if a proxy is in front of the server, raise its request size limit"
        case .rejected(let status, let code, let message): "the server refused the request (\(status) \(code): \(message))"
        case .unauthorized(let message): "the server does not accept this token (401: \(message)); check --token-file"
        case .forbidden(let message):
            "the server or a proxy refused access (403: \(message)); check the proxy's rules and the --server URL"
        case .notFound(let server, let message): "the server at \(server) answered 404 (\(message)): is the URL right?"
        case .untrustedCertificate(let message):
            "certificate not trusted (\(message)): see --ca-file, or check the --server URL's host name"
        case .badURL(let message): "the server URL cannot work (\(message)); fix it with --server URL"
        case .cursorGone: "the server asked for a full resync"
        case .changeIDReused(let message): "a change id was reused (\(message))"
        case .serverBroke(let reason): "the server failed (\(reason))"
        }
    }

    /// True for failures that may clear up by themselves; the others need
    /// someone to act (fix the URL, the token, the certificate, a proxy).
    /// Either way the run is retried with backoff.
    public var isTransient: Bool {
        switch self {
        case .offline, .serverBroke: true
        case .rejected, .unauthorized, .forbidden, .notFound, .untrustedCertificate, .badURL, .cursorGone,
            .changeIDReused:
            false
        }
    }

    /// A push of several changes answered this way is sent again change by
    /// change: the fault may lie with one change (a malformed one, a size
    /// limit, a reused id), and the others must not wait behind it.
    var splitsPush: Bool {
        switch self {
        case .changeIDReused: true
        case .rejected(let status, _, _): status == 400 || status == 413
        default: false
        }
    }

    /// The only whole-request answer that refuses a lone change: this
    /// server's own `413 payload_too_large` (its JSON error code, not a
    /// proxy's page) for a push of that change alone. The request cannot get
    /// smaller, so the change can never be delivered; the server answers
    /// every smaller too-large note with `refused` itself.
    public var refusesLoneChange: Bool {
        if case .rejected(413, ErrorCode.payloadTooLarge.rawValue, _) = self { return true }
        return false
    }
}

/// Turns a response status and body into a wire value or a `TransportError`,
/// the same way for every transport: the one place HTTP answers are classified.
public enum TransportDecoding {
    /// `server` names the configured URL in messages (nil: "the server").
    public static func decode<T: Decodable>(
        _ type: T.Type, status: Int, body: Data, server: String? = nil
    ) throws(TransportError) -> T {
        guard (200..<300).contains(status) else { throw error(status: status, body: body, server: server) }
        do {
            return try WireCoding.decoder().decode(T.self, from: body)
        } catch {
            throw .serverBroke("unreadable \(T.self) reply (\(body.count) bytes): \(error)")
        }
    }

    public static func error(status: Int, body: Data, server: String? = nil) -> TransportError {
        let detail = try? WireCoding.decoder().decode(ErrorBody.self, from: body)
        let code = detail?.error.code.rawValue ?? "http_\(status)"
        let message = detail?.error.message ?? Self.summary(of: body)
        switch status {
        case 401: return .unauthorized(message)
        case 403: return .forbidden(message)
        case 404: return .notFound(server: server ?? "the configured URL", message: message)
        case 409 where code == ErrorCode.changeIdReused.rawValue: return .changeIDReused(message)
        case 410: return .cursorGone
        case 408, 429: return .serverBroke("\(status) \(message)")
        case 400..<500: return .rejected(status: status, code: code, message: message)
        default: return .serverBroke("\(status) \(code): \(message)")
        }
    }

    /// A short printable summary of a body that is not our error JSON (a
    /// proxy's HTML page): its first line of text, or its size.
    static func summary(of body: Data) -> String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
            .replacingOccurrences(of: "<[^>]*>", with: " ", options: .regularExpression)
            .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .first { !$0.isEmpty }
        return text.map { String($0.prefix(120)) } ?? "an empty answer"
    }

    /// Encodes a request body.
    public static func encode<T: Encodable>(_ value: T) throws(TransportError) -> Data {
        do {
            return try WireCoding.encoder().encode(value)
        } catch {
            throw .rejected(status: 0, code: "encoding", message: "cannot encode \(T.self): \(error)")
        }
    }
}
