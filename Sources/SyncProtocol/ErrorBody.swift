/// Every error reply: `{ "error": { "code", "message" } }`.
public struct ErrorBody: Hashable, Sendable, Codable, Error {
    /// The error itself.
    public struct Detail: Hashable, Sendable, Codable {
        /// A stable machine-readable code; see `ErrorCode`.
        public var code: ErrorCode
        /// A sentence for people; never contains note text.
        public var message: String
    }

    public var error: Detail

    public init(code: ErrorCode, message: String) {
        error = Detail(code: code, message: message)
    }
}

/// The `code` of an error reply, with the HTTP status the server sends it with.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// 400: malformed JSON, wrong types, unknown fields, invalid UUIDs, a bad
    /// query parameter, or a push that breaks its rules (duplicates).
    public static let badRequest = ErrorCode(rawValue: "bad_request")
    /// 401: missing, malformed, unknown or revoked token.
    public static let unauthorized = ErrorCode(rawValue: "unauthorized")
    /// 404: no such route.
    public static let notFound = ErrorCode(rawValue: "not_found")
    /// 405: the route exists but not with this method.
    public static let methodNotAllowed = ErrorCode(rawValue: "method_not_allowed")
    /// 409: a change id the server knows came with a different payload; make a new id.
    public static let changeIdReused = ErrorCode(rawValue: "change_id_reused")
    /// 410: the cursor is from another epoch, older than retention, or ahead of
    /// the counter; resync through `/v1/index`.
    public static let cursorGone = ErrorCode(rawValue: "cursor_gone")
    /// 413: the request body is larger than `requestBodyBytesMax`.
    public static let payloadTooLarge = ErrorCode(rawValue: "payload_too_large")
    /// 413: more than `pushChangesMax` changes (or `fetchEntitiesMax` refs).
    public static let tooManyChanges = ErrorCode(rawValue: "too_many_changes")
    /// 413: more than `pushPayloadBytesMax` decoded bytes in a push of several changes.
    public static let pushTooLarge = ErrorCode(rawValue: "push_too_large")
    /// 500: a bug; the request changed nothing.
    public static let internalError = ErrorCode(rawValue: "internal")
    /// 503: the store is busy, full or shutting down; retry with backoff.
    public static let unavailable = ErrorCode(rawValue: "unavailable")

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
