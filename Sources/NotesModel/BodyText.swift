import Foundation

/// Whether a note's bytes are text, for search: a snippet shows only text,
/// and the index skips the words of a body that is plainly not text.
public enum BodyText {
    /// True when a snippet may show `body`: valid UTF-8 without NUL bytes.
    /// Anything else (a PNG or a PDF copied into the mount, Latin-1 text,
    /// text with a zero-filled gap) is listed without a snippet.
    public static func isText(_ body: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < body.count {
            guard body[index] != 0, let length = sequenceLength(body, at: index) else { return false }
            index += length
        }
        return true
    }

    /// True when `body` is text (see the buffer form).
    public static func isText(_ body: Data) -> Bool {
        body.withUnsafeBytes { isText($0.bindMemory(to: UInt8.self)) }
    }

    /// Bytes of a body's start that `looksBinary` reads.
    public static let sniffBytes = 8_192
    /// Percent of those bytes that must be odd for a body to look binary.
    public static let binaryPercentMin = 30

    /// True when more than `binaryPercentMin` percent of the first
    /// `sniffBytes` bytes are NUL, control characters other than tab, line
    /// and page breaks and escape, or bytes of invalid UTF-8: a PNG, a PDF's
    /// compressed streams, a zip. The index holds no words of such a body
    /// (its bytes would turn up as words), only its title. Text with a few
    /// odd bytes (Latin-1 accents, a torn character, a zero-filled gap) stays
    /// searchable.
    public static func looksBinary(_ body: UnsafeBufferPointer<UInt8>) -> Bool {
        let end = min(body.count, sniffBytes)
        guard end > 0 else { return false }
        var odd = 0
        var index = 0
        while index < end {
            let byte = body[index]
            if byte < 0x80 {
                if byte < 0x20 && !(0x09...0x0D).contains(byte) && byte != 0x1B { odd += 1 }
                index += 1
            } else if let length = sequenceLength(body, at: index) {
                index += length
            } else {
                odd += 1
                index += 1
            }
        }
        return odd * 100 > end * binaryPercentMin
    }

    /// True when `body` looks binary (see the buffer form).
    public static func looksBinary(_ body: Data) -> Bool {
        body.withUnsafeBytes { looksBinary($0.bindMemory(to: UInt8.self)) }
    }

    /// The length of the valid UTF-8 sequence at `index`, or nil: no
    /// overlong forms, surrogates or scalars past U+10FFFF.
    static func sequenceLength(_ body: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let lead = body[index]
        if lead < 0x80 { return 1 }
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: (length, low) = (3, 0xA0)
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: (length, high) = (3, 0x9F)
        case 0xF0: (length, low) = (4, 0x90)
        case 0xF1...0xF3: length = 4
        case 0xF4: (length, high) = (4, 0x8F)
        default: return nil
        }
        guard index + length <= body.count else { return nil }
        // Only the second byte has a narrower range.
        guard body[index + 1] >= low && body[index + 1] <= high else { return nil }
        for offset in 2..<length where body[index + offset] & 0xC0 != 0x80 { return nil }
        return length
    }
}
