import Foundation
import NotesModel
import SyncProtocol

/// Reading a request: query parameters and JSON bodies, each mistake a 400
/// (or 413) that names what is wrong.
extension SyncServer {
    /// The `limit` parameter, cut to `max`; `max` when absent.
    func pageLimit(_ request: ServerRequest, max: Int) throws -> Int {
        let limit = min(try integer(request, Endpoint.Query.limit) ?? max, max)
        guard limit >= 1 else { throw ServerError.badRequest("limit must be at least 1") }
        return limit
    }

    /// The `after` parameter of a page by (kind, id): a previous page's `nextAfter`.
    func afterParameter(_ request: ServerRequest) throws -> EntityRef? {
        guard let text = request.query[Endpoint.Query.after] else { return nil }
        guard let ref = EntityRef(text) else {
            throw ServerError.badRequest("after must be the nextAfter of a previous page")
        }
        return ref
    }

    func integer(_ request: ServerRequest, _ name: String) throws -> Int? {
        guard let text = request.query[name] else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw ServerError.badRequest("\(name) must be a whole number ≥ 0")
        }
        return value
    }

    /// The direct reader takes plain requests; anything else goes to the
    /// decoder, which names what is wrong (or accepts it too).
    func decodePush(_ body: Data) throws -> PushRequest {
        if body.count <= limits.requestBodyBytesMax, let push = PushRequest.read(body) { return push }
        return try decode(PushRequest.self, from: body)
    }

    func decode<T: Decodable>(_ type: T.Type, from body: Data) throws -> T {
        guard body.count <= limits.requestBodyBytesMax else {
            throw ServerError.payloadTooLarge("the body is larger than \(limits.requestBodyBytesMax) bytes")
        }
        do {
            return try WireCoding.decoder().decode(type, from: body)
        } catch let error as DecodingError {
            throw ServerError.badRequest(Self.describe(error))
        } catch {
            throw ServerError.badRequest("the body is not valid JSON")
        }
    }

    /// A decoding error as a sentence naming the field, never echoing values.
    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            let text = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
            return text.isEmpty ? "the body" : String(text.dropFirst(text.hasPrefix(".") ? 1 : 0))
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(type)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(type), found null"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): missing"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "the body is not valid JSON" }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "the body does not match the schema"
        }
    }
}

extension Change {
    /// UTF-8 bytes of the title or folder name.
    var payloadNameBytes: Int { (note?.title.utf8.count ?? 0) + (folder?.name.utf8.count ?? 0) }
}
