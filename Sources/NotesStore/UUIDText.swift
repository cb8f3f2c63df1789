import Foundation

/// The canonical lowercase text form of ids, parsed and made without
/// Foundation's `UUID(uuidString:)` (sscanf) and `uuidString.lowercased()`
/// (two strings): every listed entry and every row lookup goes through these.
enum UUIDText {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    static let textLength = 36

    /// Parses `8-4-4-4-12` hex digits (either case); falls back to Foundation
    /// for anything else it might accept.
    static func parse(_ text: String) -> UUID? {
        var text = text
        let fast: UUID?? = text.withUTF8 { bytes -> UUID?? in
            guard bytes.count == textLength else { return .none }
            var raw = [UInt8](repeating: 0, count: 16)
            var index = 0
            var high: UInt8? = nil
            for offset in 0..<textLength {
                let byte = bytes[offset]
                if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                    guard byte == UInt8(ascii: "-") else { return .some(nil) }
                    continue
                }
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
                default: return .some(nil)
                }
                if let first = high {
                    raw[index] = first << 4 | value
                    index += 1
                    high = nil
                } else {
                    high = value
                }
            }
            return .some(
                UUID(
                    uuid: (
                        raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
                        raw[11], raw[12], raw[13], raw[14], raw[15]
                    )))
        }
        switch fast {
        case .some(let parsed?): return parsed
        case .some(nil), .none: return UUID(uuidString: text)
        }
    }

    /// The lowercase text form, as `NoteID.description` gives it.
    static func format(_ uuid: UUID) -> String {
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
