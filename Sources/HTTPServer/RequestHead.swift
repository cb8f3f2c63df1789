import Foundation
import SyncServer

/// The header lines of a request, every one of them (duplicates included),
/// and the framing rules of RFC 9112 §6 checked on them before any body
/// byte is read.
struct RequestHead {
    /// (name, value) in the order received.
    let fields: [(name: String, value: String)]
    /// `HTTP/1.0` or `HTTP/1.1`.
    let version: String

    /// How the body is framed, once the head passed `framingRefusal`.
    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
    }

    func values(_ name: String) -> [String] {
        // ASCII case folding is enough: `framing` has checked that every name is a token.
        let lowered = { (byte: UInt8) in (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte }
        return fields.filter { field in field.name.utf8.elementsEqual(name.utf8) { lowered($0) == lowered($1) } }
            .map(\.value)
    }

    /// The framing, or a message for a 400 when the body's length is
    /// ambiguous or invalid. Ambiguity is never resolved by guessing (RFC
    /// 9112 §6.3 allows a server to process Transfer-Encoding over
    /// Content-Length; behind a proxy that reads it the other way, that is
    /// request smuggling), so the connection is closed after the answer.
    func framing() -> Result<Framing, FramingError> {
        if let bad = fields.first(where: { !Self.isToken($0.name) }) {
            return .failure(FramingError("the header name '\(bad.name.prefix(40))' is not valid"))
        }
        let lengths = values("Content-Length")
        let encodings = values("Transfer-Encoding")
        if !encodings.isEmpty {
            if !lengths.isEmpty {
                return .failure(FramingError("a request may not carry both Content-Length and Transfer-Encoding"))
            }
            if version != "HTTP/1.1" {
                return .failure(FramingError("Transfer-Encoding needs HTTP/1.1"))
            }
            let codings = encodings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard codings == ["chunked"] else {
                return .failure(
                    FramingError("Transfer-Encoding must be exactly 'chunked' (other codings are not supported)"))
            }
            return .success(.chunked)
        }
        guard !lengths.isEmpty else { return .success(.none) }
        guard lengths.count == 1 else {
            return .failure(FramingError("a request may carry one Content-Length header, not \(lengths.count)"))
        }
        let text = lengths[0].utf8.allSatisfy({ $0 != 0x20 && $0 != 0x09 })
            ? lengths[0] : lengths[0].trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (48...57).contains($0) }),
            let length = Int(text)
        else { return .failure(FramingError("Content-Length must be a decimal number of bytes")) }
        return .success(length == 0 ? .none : .length(length))
    }

    private static let tokenSymbols: [UInt8] = Array("!#$%&'*+-.^_`|~".utf8)

    /// RFC 9110 `token`: what a field name is made of (no spaces, no colon).
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: tokenSymbols.contains(byte)
                }
            }
    }
}

/// Why a request's framing was refused (the message of its 400).
struct FramingError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
