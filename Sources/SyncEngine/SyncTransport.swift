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

/// Why a request did not get a usable answer. The engine treats each kind differently.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No network, connection refused, or timed out: try again later.
    case offline(String)
    /// The server said no to this request (a 4xx); retrying the same request will not help.
    case rejected(status: Int, code: String, message: String)
    /// The token is missing, wrong or revoked (401/404 on auth).
    case unauthorized(String)
    /// The cursor is expired, foreign or from the future (410): resync.
    case cursorGone
    /// The change id was already used with another payload (409): renew it.
    case changeIDReused(String)
    /// The server failed (5xx) or answered something unreadable: back off and retry.
    case serverBroke(String)

    public var description: String {
        switch self {
        case .offline(let reason): "cannot reach the server (\(reason))"
        case .rejected(let status, let code, let message): "the server refused the request (\(status) \(code): \(message))"
        case .unauthorized(let message): "the server does not accept this token (\(message)); check --token-file"
        case .cursorGone: "the server asked for a full resync"
        case .changeIDReused(let message): "a change id was reused (\(message))"
        case .serverBroke(let reason): "the server failed (\(reason))"
        }
    }

    /// True for failures worth retrying after a backoff.
    public var isTransient: Bool {
        switch self {
        case .offline, .serverBroke: true
        case .rejected, .unauthorized, .cursorGone, .changeIDReused: false
        }
    }
}

/// Turns a response status and body into a wire value or a `TransportError`,
/// the same way for every transport.
public enum TransportDecoding {
    public static func decode<T: Decodable>(_ type: T.Type, status: Int, body: Data) throws(TransportError) -> T {
        guard (200..<300).contains(status) else { throw error(status: status, body: body) }
        do {
            return try WireCoding.decoder().decode(T.self, from: body)
        } catch {
            throw .serverBroke("unreadable \(T.self) reply: \(error)")
        }
    }

    public static func error(status: Int, body: Data) -> TransportError {
        let detail = try? WireCoding.decoder().decode(ErrorBody.self, from: body)
        let code = detail?.error.code.rawValue ?? "http_\(status)"
        let message = detail?.error.message ?? String(decoding: body.prefix(200), as: UTF8.self)
        switch status {
        case 401: return .unauthorized(message)
        case 409 where code == ErrorCode.changeIdReused.rawValue: return .changeIDReused(message)
        case 410: return .cursorGone
        case 408, 429: return .serverBroke("\(status) \(message)")
        case 400..<500: return .rejected(status: status, code: code, message: message)
        default: return .serverBroke("\(status) \(code): \(message)")
        }
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
