import Foundation
import NotesModel
import SyncProtocol

/// Why a request failed. `response` maps each case to its HTTP status and
/// JSON body in one place.
public enum ServerError: Error, Equatable, Sendable, CustomStringConvertible {
    case badRequest(String)
    case unauthorized
    case notFound(String)
    case methodNotAllowed(String)
    case changeIdReused(ChangeID)
    case cursorGone(String)
    case payloadTooLarge(String)
    case tooManyChanges(String)
    case pushTooLarge(String)
    case unavailable(String)
    case internalError(String)

    /// The HTTP status, the error code and a message (never note text).
    public var parts: (status: Int, code: ErrorCode, message: String) {
        switch self {
        case .badRequest(let message): (400, .badRequest, message)
        case .unauthorized: (401, .unauthorized, "missing, invalid or revoked token")
        case .notFound(let path): (404, .notFound, "no route \(path)")
        case .methodNotAllowed(let allowed): (405, .methodNotAllowed, "use \(allowed)")
        case .changeIdReused(let id):
            (409, .changeIdReused, "change id \(id) was used before with a different payload; make a new change id")
        case .cursorGone(let why): (410, .cursorGone, "\(why); resync through \(Endpoint.index)")
        case .payloadTooLarge(let message): (413, .payloadTooLarge, message)
        case .tooManyChanges(let message): (413, .tooManyChanges, message)
        case .pushTooLarge(let message): (413, .pushTooLarge, message)
        case .unavailable(let message): (503, .unavailable, message)
        case .internalError(let message): (500, .internalError, message)
        }
    }

    public var description: String {
        let parts = parts
        return "\(parts.status) \(parts.code): \(parts.message)"
    }

    /// Any error as a `ServerError`, and for store and unexpected errors the
    /// details for the server log. Those details (SQL, database hosts, lock
    /// graphs) stay out of the reply, which names a log reference instead so an
    /// operator can find the log line: store errors become 503 or 500.
    static func from(_ error: any Error) -> (ServerError, logDetail: String?) {
        if let error = error as? ServerError { return (error, nil) }
        // Eight random hex digits tying the reply to its log line.
        let reference = String(format: "%08x", UInt32.random(in: .min ... .max))
        switch error {
        case ServerStoreError.unavailable(let detail):
            return (
                .unavailable("the server's database is unavailable or busy; retry in a moment (log reference \(reference))"),
                "\(reference): \(detail)"
            )
        default:
            return (
                .internalError("the server failed on this request; its operator can look up log reference \(reference)"),
                "\(reference): \(String(describing: error))"
            )
        }
    }

    /// The response for this error.
    public var response: ServerResponse {
        let parts = parts
        var response = ServerResponse.json(
            status: parts.status, ErrorBody(code: parts.code, message: parts.message))
        if parts.status == 503 { response.headers.append(("Retry-After", "5")) }
        if case .unauthorized = self { response.headers.append(("WWW-Authenticate", "Bearer")) }
        if case .methodNotAllowed(let allowed) = self { response.headers.append(("Allow", allowed)) }
        return response
    }
}
