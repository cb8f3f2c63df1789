import Foundation
import NotesModel

/// Bearer tokens: `nfs_<id>_<secret>`. The id (24 hex digits) finds the row;
/// the secret (43 base64url characters, 256 random bits) is checked against
/// its stored SHA-256 in constant time. Only the hash is ever stored.
public struct AccessToken: Sendable, Hashable {
    public let id: String
    public let secret: String

    /// The text a client sends after `Bearer `.
    public var text: String { "nfs_\(id)_\(secret)" }

    /// A new random token.
    public static func generate() -> AccessToken {
        var generator = SystemRandomNumberGenerator()
        return generate(using: &generator)
    }

    /// A new token from `generator` (tests pass a seeded one).
    public static func generate<G: RandomNumberGenerator>(using generator: inout G) -> AccessToken {
        let idBytes = (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let secretBytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let id = idBytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        let secret = Data(secretBytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return AccessToken(id: id, secret: secret)
    }

    /// Parses a token's text; nil when it has the wrong shape.
    public init?(text: String) {
        // `nfs_`, 24 lowercase hex digits, `_`, 43 base64url characters; read
        // byte by byte, as every request's token passes here.
        let bytes = Array(text.utf8)
        guard bytes.count == 72, bytes[0] == UInt8(ascii: "n"), bytes[1] == UInt8(ascii: "f"),
            bytes[2] == UInt8(ascii: "s"), bytes[3] == UInt8(ascii: "_"), bytes[28] == UInt8(ascii: "_"),
            bytes[4..<28].allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
            bytes[29...].allSatisfy({ byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45
                    || byte == 95
            })
        else { return nil }
        id = String(decoding: bytes[4..<28], as: UTF8.self)
        secret = String(decoding: bytes[29...], as: UTF8.self)
    }

    init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }

    /// The hash that is stored instead of the secret.
    public var secretHash: [UInt8] { SHA256.hash(Array(secret.utf8)) }

    /// The token in an `Authorization: Bearer` header, or nil.
    public static func fromAuthorization(_ header: String?) -> AccessToken? {
        guard let header, header.utf8.count < 256 else { return nil }
        let prefix = "Bearer "
        guard header.hasPrefix(prefix) else { return nil }
        // Spaces and tabs around the token are not part of it (Foundation's
        // trimming costs more than the rest of the check).
        let token = header.utf8.dropFirst(prefix.utf8.count)
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = token.firstIndex(where: { !isBlank($0) }), let last = token.lastIndex(where: { !isBlank($0) })
        else { return nil }
        return AccessToken(text: String(Substring(token[first...last])))
    }

    /// Compares two byte strings in time that depends only on their lengths.
    public static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
