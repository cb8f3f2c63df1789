import Foundation

/// What libmicrohttpd keeps for one request (its `con_cls`) from the moment
/// the request line is read, before the head is parsed; it then holds the
/// request's `RequestContext`. A request libmicrohttpd refuses by itself (a
/// head too large, a bad Content-Length) still ends with a log line from it.
///
/// `@unchecked Sendable`: `request` is set and read only from libmicrohttpd's
/// callbacks for this connection, which all run on the connection's one
/// worker thread; the handler task holds the `RequestContext`, never the slot.
final class RequestSlot: @unchecked Sendable {
    /// The path as sent (percent-encoded), escaped for the log.
    let path: String
    /// Query parameters in the request line, counted before libmicrohttpd
    /// parses them.
    let queryParameterCount: Int
    /// The client's address, made into text only for a log line.
    let client: ClientAddress?
    var request: RequestContext?

    init(path: String, queryParameterCount: Int, client: ClientAddress?) {
        self.path = path
        self.queryParameterCount = queryParameterCount
        self.client = client
    }
}
