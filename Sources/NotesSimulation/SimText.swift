import Foundation

/// Note bodies the simulation writes: every line carries a unique token
/// `§n§`, so "no lost text" can be checked exactly, token by token.
enum SimText {
    static let words = ["milk", "plan", "call", "idea", "fix", "draft", "todo", "read", "ship", "note"]

    static func line(token: Int, words count: Int, random: inout SimRandom) -> String {
        var text = "§\(token)§"
        for _ in 0..<count { text += " " + (random.pick(words) ?? "x") }
        return text
    }

    /// The lines of a body (its last line ends with a newline when it has one).
    static func lines(_ body: Data) -> [String] {
        let text = String(decoding: body, as: UTF8.self)
        var lines = text.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    static func body(_ lines: [String]) -> Data {
        lines.isEmpty ? Data() : Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// Every token in `data`, wherever it appears.
    static func tokens(_ data: Data) -> Set<Int> {
        var found = Set<Int>()
        let marker: [UInt8] = [0xC2, 0xA7]  // "§" in UTF-8
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            let bytes = raw.bindMemory(to: UInt8.self)
            var index = 0
            let count = bytes.count
            while index + 1 < count {
                guard bytes[index] == marker[0], bytes[index + 1] == marker[1] else {
                    index += 1
                    continue
                }
                var cursor = index + 2
                var value = 0
                var digits = 0
                while cursor < count, bytes[cursor] >= 0x30, bytes[cursor] <= 0x39, digits < 12 {
                    value = value * 10 + Int(bytes[cursor] - 0x30)
                    cursor += 1
                    digits += 1
                }
                if digits > 0, cursor + 1 < count, bytes[cursor] == marker[0], bytes[cursor + 1] == marker[1] {
                    found.insert(value)
                    index = cursor + 2
                } else {
                    index += 2
                }
            }
        }
        return found
    }
}
