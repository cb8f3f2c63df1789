import Foundation

/// How a note body travels in JSON.
public enum BodyEncoding: String, Sendable, Hashable, Codable {
    /// The body is the JSON string itself (it must be valid UTF-8, which a JSON
    /// string always is). This is the meaning of an absent `bodyEncoding`.
    case utf8
    /// The body is the standard base64 of the bytes (RFC 4648 §4, with padding).
    case base64
}

/// Converts note bytes to and from their wire form.
public enum WireBody {
    /// The wire form of `bytes`: the text itself when the bytes are valid UTF-8
    /// and JSON-escaping them costs no more than base64 would, otherwise base64.
    /// `encoding` is nil for text, so the field is left out of the JSON.
    public static func encode(_ bytes: Data) -> (text: String, encoding: BodyEncoding?) {
        if let text = String(data: bytes, encoding: .utf8), escapedSize(of: bytes) <= base64Size(of: bytes.count) {
            return (text, nil)
        }
        return (bytes.base64EncodedString(), .base64)
    }

    /// The bytes of a wire body, or nil when `encoding` is base64 and `text` is
    /// not valid base64.
    public static func decode(_ text: String, encoding: BodyEncoding?) -> Data? {
        switch encoding ?? .utf8 {
        case .utf8: return Data(text.utf8)
        case .base64: return Data(base64Encoded: text)
        }
    }

    /// The number of bytes `decode` would return, computed without decoding.
    public static func decodedCount(_ text: String, encoding: BodyEncoding?) -> Int {
        switch encoding ?? .utf8 {
        case .utf8:
            return text.utf8.count
        case .base64:
            let count = text.utf8.count
            var padding = 0
            for byte in text.utf8.reversed().prefix(2) where byte == UInt8(ascii: "=") { padding += 1 }
            return max(0, count / 4 * 3 - padding)
        }
    }

    static func base64Size(of count: Int) -> Int { (count + 2) / 3 * 4 }

    /// The size of the bytes as a JSON string body (an upper bound).
    static func escapedSize(of bytes: Data) -> Int {
        // Over the raw buffer: Data's own iterator costs a call per byte, which
        // made this the largest cost of serving a page of note bodies.
        bytes.withUnsafeBytes { buffer in
            var size = 0
            for byte in buffer {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x09, 0x0A, 0x0C, 0x0D: size += 2
                case 0..<0x20: size += 6
                default: size += 1
                }
            }
            return size
        }
    }
}
