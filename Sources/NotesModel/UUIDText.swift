import Foundation

/// The canonical lowercase text form of ids, parsed and made without
/// Foundation's `UUID(uuidString:)` (sscanf) and `uuidString.lowercased()`
/// (two strings): every id written to or read from a database row, a listing
/// entry or the wire goes through these.
public enum UUIDText {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    /// The length of the canonical form.
    public static let textLength = 36

    /// Parses `8-4-4-4-12` hex digits (either case); falls back to Foundation
    /// for anything else it might accept.
    public static func parse(_ text: String) -> UUID? {
        var text = text
        if let parsed = text.withUTF8({ parse(bytes: $0) }) { return parsed }
        return UUID(uuidString: text)
    }

    /// Parses the canonical `8-4-4-4-12` hex form (either case) straight from
    /// a column's bytes, with no string and no allocation; nil for anything else.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard bytes.count == textLength else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let complete = withUnsafeMutableBytes(of: &raw) { out -> Bool in
            var offset = 0
            for index in 0..<16 {
                if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                    guard bytes[offset] == UInt8(ascii: "-") else { return false }
                    offset += 1
                }
                guard let high = hexValue(bytes[offset]), let low = hexValue(bytes[offset + 1]) else { return false }
                out[index] = high << 4 | low
                offset += 2
            }
            return true
        }
        return complete ? UUID(uuid: raw) : nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// True when `a`'s lowercase text sorts before `b`'s. Hex digits keep byte
    /// order ('0'–'9' before 'a'–'f') and the dashes sit at fixed places, so
    /// comparing the 16 bytes gives the text order without making the text.
    public static func precedes(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { left in
            withUnsafeBytes(of: b.uuid) { right in
                left.lexicographicallyPrecedes(right)
            }
        }
    }

    /// The 16 bytes as two words, for hashing and comparing ids (`Hasher`
    /// takes two words faster than 16 loose bytes, and the mount hashes an
    /// id for every entry it lists or looks up).
    @inlinable
    public static func words(_ uuid: UUID) -> (UInt64, UInt64) {
        withUnsafeBytes(of: uuid.uuid) { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// The lowercase text form, as `NoteID.description` gives it.
    public static func format(_ uuid: UUID) -> String {
        withUnsafeBytes(of: uuid.uuid) { raw in
            String(unsafeUninitializedCapacity: textLength) { buffer in
                var out = 0
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        buffer[out] = UInt8(ascii: "-")
                        out += 1
                    }
                    buffer[out] = hexDigits[Int(byte >> 4)]
                    buffer[out + 1] = hexDigits[Int(byte & 0x0f)]
                    out += 2
                }
                return out
            }
        }
    }
}
