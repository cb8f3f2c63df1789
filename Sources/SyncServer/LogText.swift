import Foundation

/// Text from a request made safe for one line of the server log.
///
/// Anything a client sends (path, method, header values) may hold percent-encoded
/// line breaks, terminal escapes or spaces that would forge a line or a field.
/// Control bytes, spaces, backslashes, DEL, C1 controls and the Unicode line and
/// paragraph separators become `\xNN` / `\u{NNNN}`, so one request is always
/// exactly one line and its fields stay apart.
public enum LogText {
    /// `text` escaped and cut to `limit` characters (a cut shows as `…`);
    /// `keepingSpaces` for text made of several fields of the server's own.
    public static func escaped(_ text: some StringProtocol, limit: Int = 200, keepingSpaces: Bool = false) -> String {
        // Most fields are short printable ASCII and need nothing: one pass, no formatting.
        var plain = String(text)
        if plain.utf8.count <= limit,
            plain.withUTF8({ bytes in
                bytes.allSatisfy { byte in
                    (0x21...0x7E).contains(byte) && byte != 0x5C || (keepingSpaces && byte == 0x20)
                }
            })
        {
            return plain
        }
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else {
                result += "…"
                break
            }
            count += 1
            switch scalar.value {
            case 0x5C: result += "\\\\"
            case 0x20 where keepingSpaces: result += " "
            case 0x00...0x20, 0x7F: result += String(format: "\\x%02x", scalar.value)
            case 0x80...0x9F, 0x2028, 0x2029: result += String(format: "\\u{%04x}", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
