/// A position in an account's change feed. Clients keep it and send it back
/// unchanged; its text is opaque to them.
///
/// The server writes `<epoch>.<counter>`: the server database's epoch (a new
/// one after restoring from a backup) and the last account counter value the
/// client has seen. A cursor of another epoch, older than tombstone
/// retention, or ahead of the counter is answered with `410 Gone`.
public struct SyncCursor: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The text form.
    public let rawValue: String

    /// Wraps text received from the server.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The server's constructor.
    public init(epoch: String, counter: Int64) {
        rawValue = "\(epoch).\(counter)"
    }

    /// The epoch part, or nil when the text is not a cursor. For the server.
    public var epoch: String? { parts?.epoch }
    /// The counter part, or nil when the text is not a cursor. For the server.
    public var counter: Int64? { parts?.counter }

    private var parts: (epoch: String, counter: Int64)? {
        guard rawValue.utf8.count <= 128, let dot = rawValue.lastIndex(of: ".") else { return nil }
        let epoch = String(rawValue[..<dot])
        guard !epoch.isEmpty, epoch.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }),
            let counter = Int64(rawValue[rawValue.index(after: dot)...]), counter >= 0
        else { return nil }
        return (epoch, counter)
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
