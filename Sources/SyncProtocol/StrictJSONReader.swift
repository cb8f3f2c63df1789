import Foundation
import NotesModel

/// A forward-only reader over JSON bytes for the server's hot requests.
///
/// It accepts a strict subset of what `JSONDecoder` accepts and gives up
/// (returns nil or false) on anything else: invalid UTF-8, lone surrogates,
/// numbers that are not plain whole numbers, duplicate keys. Its callers then
/// decode the same bytes with `JSONDecoder`, whose error names the field, so
/// a bad request is always judged and reported by the one strict decoder.
struct StrictJSONReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// True when only whitespace is left.
    mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` (after whitespace); false when something else is next.
    mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Consumes `null` when it is next.
    mutating func consumeNull() -> Bool {
        skipWhitespace()
        guard index + 4 <= bytes.count, bytes[index] == UInt8(ascii: "n"), bytes[index + 1] == UInt8(ascii: "u"),
            bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
        else { return false }
        index += 4
        return true
    }

    /// Reads an object, calling `field` with each key; `field` reads the
    /// value and returns false to give up. Keys must be distinct.
    mutating func readObject(_ field: (inout StrictJSONReader, String) -> Bool) -> Bool {
        guard consume(UInt8(ascii: "{")) else { return false }
        if consume(UInt8(ascii: "}")) { return true }
        var keys: [String] = []
        while true {
            guard let key = readString(), !keys.contains(key), consume(UInt8(ascii: ":")) else { return false }
            keys.append(key)
            guard field(&self, key) else { return false }
            if consume(UInt8(ascii: ",")) { continue }
            return consume(UInt8(ascii: "}"))
        }
    }

    /// Reads an array, calling `element` for each value.
    mutating func readArray(_ element: (inout StrictJSONReader) -> Bool) -> Bool {
        guard consume(UInt8(ascii: "[")) else { return false }
        if consume(UInt8(ascii: "]")) { return true }
        while true {
            guard element(&self) else { return false }
            if consume(UInt8(ascii: ",")) { continue }
            return consume(UInt8(ascii: "]"))
        }
    }

    /// A whole number from 1 to `Int64.max` written plainly (no sign, no
    /// leading zero, no fraction or exponent); nil for anything else.
    mutating func readPositiveInt64() -> Int64? {
        skipWhitespace()
        guard index < bytes.count, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
        var value: Int64 = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            index += 1
        }
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        return value
    }

    /// A whole number from 0 to `Int64.max` written plainly; nil for anything else.
    mutating func readNonNegativeInt64() -> Int64? {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "0") else { return readPositiveInt64() }
        index += 1
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"):
                return nil
            default: break
            }
        }
        return 0
    }

    /// `true` or `false`; nil for anything else.
    mutating func readBool() -> Bool? {
        skipWhitespace()
        for (word, value) in [("true", true), ("false", false)] {
            let utf8 = Array(word.utf8)
            guard index + utf8.count <= bytes.count,
                utf8.indices.allSatisfy({ bytes[index + $0] == utf8[$0] })
            else { continue }
            index += utf8.count
            return value
        }
        return nil
    }

    /// A UUID in its `8-4-4-4-12` form (either case); nil for anything else.
    mutating func readUUID() -> UUID? {
        skipWhitespace()
        let start = index + 1
        let end = start + UUIDText.textLength
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), end < bytes.count,
            bytes[end] == UInt8(ascii: "\""),
            let uuid = UUIDText.parse(bytes: UnsafeBufferPointer(rebasing: bytes[start..<end]))
        else { return nil }
        index = end + 1
        return uuid
    }

    /// A string, unescaped; nil when it is not valid JSON text or not UTF-8.
    mutating func readString() -> String? {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        let start = index
        // The common case: no escape, so the bytes are the text.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            index += 1
        }
        return readEscapedString(from: start)
    }

    private mutating func readEscapedString(from start: Int) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(min(bytes.count - start, 65_536))
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            // Copy the plain run up to the next quote, backslash or control byte at once.
            let runStart = index
            while index < bytes.count, bytes[index] >= 0x20, bytes[index] != UInt8(ascii: "\""),
                bytes[index] != UInt8(ascii: "\\")
            {
                index += 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            guard index < bytes.count else { return nil }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: out, as: UTF8.self)
            case 0..<0x20:
                return nil
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = readEscapedScalar() else { return nil }
                    out.append(contentsOf: scalar.utf8)
                default:
                    return nil
                }
            default:
                out.append(byte)
            }
        }
        return nil
    }

    /// The scalar of `\uXXXX` (the reader stands after the `u`), joining a
    /// surrogate pair; nil for a lone surrogate.
    private mutating func readEscapedScalar() -> Unicode.Scalar? {
        guard let first = readHex4() else { return nil }
        switch first {
        case 0xD800...0xDBFF:
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { return nil }
            index += 2
            guard let second = readHex4(), (0xDC00...0xDFFF).contains(second) else { return nil }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
        case 0xDC00...0xDFFF:
            return nil
        default:
            return Unicode.Scalar(first)
        }
    }

    private mutating func readHex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
