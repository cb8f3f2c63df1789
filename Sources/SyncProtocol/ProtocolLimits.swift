/// The limits both sides agree on. The server enforces them (each is
/// configurable on the server); the client packs its requests to stay inside
/// them. Units are the last word of each name.
public struct ProtocolLimits: Sendable, Hashable, Codable {
    /// Changes in one push.
    public var pushChangesMax: Int
    /// Decoded payload bytes (titles, names and bodies) in one push. A single
    /// change larger than this may travel alone, up to `noteBytesMax`.
    public var pushPayloadBytesMax: Int
    /// Decoded bytes of one note body. A larger note is `refused` alone.
    public var noteBytesMax: Int
    /// UTF-8 bytes of one note title or folder name. A longer one is `refused`.
    public var nameBytesMax: Int
    /// Rows in one page of `/v1/changes`.
    public var pageRowsMax: Int
    /// About how many payload bytes one page of `/v1/changes` or one
    /// `/v1/fetch` answer holds; a page always holds at least one row.
    public var pageBytesMax: Int
    /// Rows in one page of `/v1/index`.
    public var indexRowsMax: Int
    /// Entities asked for in one `/v1/fetch`.
    public var fetchEntitiesMax: Int
    /// The longest long-poll wait the server honours; longer waits are cut to it.
    public var waitSecondsMax: Int
    /// Bytes of one request body as sent (JSON, after any escaping or base64).
    /// Larger requests get `413` without being read.
    public var requestBodyBytesMax: Int

    /// The defaults of DESIGN.md.
    public init(
        pushChangesMax: Int = 100,
        pushPayloadBytesMax: Int = 4 << 20,
        noteBytesMax: Int = 16 << 20,
        nameBytesMax: Int = 4_096,
        pageRowsMax: Int = 200,
        pageBytesMax: Int = 4 << 20,
        indexRowsMax: Int = 1_000,
        fetchEntitiesMax: Int = 200,
        waitSecondsMax: Int = 30,
        requestBodyBytesMax: Int? = nil
    ) {
        self.pushChangesMax = pushChangesMax
        self.pushPayloadBytesMax = pushPayloadBytesMax
        self.noteBytesMax = noteBytesMax
        self.nameBytesMax = nameBytesMax
        self.pageRowsMax = pageRowsMax
        self.pageBytesMax = pageBytesMax
        self.indexRowsMax = indexRowsMax
        self.fetchEntitiesMax = fetchEntitiesMax
        self.waitSecondsMax = waitSecondsMax
        // A note at the limit, base64-encoded (4/3), plus room for the rest of
        // the JSON. `WireBody.encode` picks base64 whenever JSON escaping would
        // make text larger than that, so every note within the limit fits.
        self.requestBodyBytesMax =
            requestBodyBytesMax
            ?? (max(noteBytesMax, pushPayloadBytesMax) + 2) / 3 * 4 + 64 * 1_024 + nameBytesMax * 6
    }

    /// The defaults.
    public static let standard = ProtocolLimits()
}
