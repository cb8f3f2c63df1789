/// Reading the sync server's `/metrics` text (one `name value` line per
/// metric), for the tests and the load generator that wait on a figure.
public enum ServerMetrics {
    /// The path the server serves its metrics on.
    public static let path = "/metrics"

    /// The value of metric `name` in a metrics text, or nil when it is not there.
    public static func value(_ name: String, in text: String) -> Int? {
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    /// Long polls the server on `port` holds now (`notesfs_long_polls_held`),
    /// asked on a connection of its own.
    public static func heldLongPolls(port: UInt16) throws(RawHTTPError) -> Int {
        let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
        guard connection.write(RawHTTPConnection.requestBytes(method: "GET", target: path, headers: [:])) else {
            throw RawHTTPError("cannot ask port \(port) for its metrics")
        }
        let text = String(decoding: try connection.readResponse().body, as: UTF8.self)
        guard let held = value("notesfs_long_polls_held", in: text) else {
            throw RawHTTPError("the metrics of port \(port) have no notesfs_long_polls_held")
        }
        return held
    }
}
