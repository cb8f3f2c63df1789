import Foundation
import NotesModel
import TestSupport

/// Random titles and note bodies for the property tests, built from pieces that
/// break naive code: separators, NUL, newlines, combining marks, emoji, bad UTF-8.
enum RandomText {
    static let titlePieces: [String] = [
        "a", "Z", "7", " ", ".", "..", "/", "\0", "\n", "\r\n", "\t", "~", "#", "é", "e\u{301}", "\u{301}",
        "👩‍👩‍👧", "🇩🇪", "日本語", "∕", "␀", ".md", ".tar.gz", "notesfs", ".notesfs", "\u{200D}", "𝄞", "Untitled",
        " (2)", "-", "_", "ß", "\u{FEFF}",
    ]

    /// A title: usually short, sometimes thousands of pieces (over 10 KB), sometimes one
    /// letter drowned in combining marks.
    static func title(_ random: inout SplitMix64) -> String {
        if random.percent(3) {
            return "e" + String(repeating: "\u{301}", count: random.int(100..<6_000))
        }
        let pieceCount = random.percent(10) ? random.int(60..<4_000) : random.int(0..<10)
        var title = ""
        for _ in 0..<pieceCount { title += random.pick(titlePieces) }
        return title
    }

    /// A valid file name, as a person or a program might make one in the mount.
    static func fileName(_ random: inout SplitMix64) -> String {
        while true {
            let pieceCount = random.int(1..<(random.percent(10) ? 120 : 8))
            var name = ""
            for _ in 0..<pieceCount { name += random.pick(titlePieces.filter { $0 != "/" && $0 != "\0" }) }
            if name.utf8.count <= 255 && name != "." && name != ".." { return name }
        }
    }

    static let sharedLines: [[UInt8]] = ["", "-", "same", "}", "    return x", "# Heading"].map { Array($0.utf8) }

    /// A base text of lines: some repeated (blank lines, braces), most unique.
    static func baseLines(_ random: inout SplitMix64, tag: String) -> [[UInt8]] {
        (0..<random.int(0..<40)).map { index in
            random.percent(30) ? random.pick(sharedLines) : Array("\(tag) base \(index)".utf8)
        }
    }

    /// `lines` after random edits: deletions, replacements and insertions of new lines
    /// (tagged `tag`, so they are new to the base and to the other side).
    static func edited(_ lines: [[UInt8]], _ random: inout SplitMix64, tag: String, percent: Int = 30)
        -> [[UInt8]]
    {
        var result: [[UInt8]] = []
        var counter = 0
        func newLine(_ random: inout SplitMix64) -> [UInt8] {
            counter += 1
            // Now and then a line that is not UTF-8.
            let bytes = Array("\(tag) new \(counter)".utf8)
            return random.percent(10) ? bytes + [0xFF, 0xC3] : bytes
        }
        for line in lines {
            guard random.percent(percent) else {
                result.append(line)
                continue
            }
            switch random.int(0..<3) {
            case 0: break  // deleted
            case 1: result.append(newLine(&random))  // replaced
            default: result.append(contentsOf: [newLine(&random), line])  // inserted before
            }
        }
        if random.percent(percent) { result.append(newLine(&random)) }
        return result
    }

    /// The bytes of `lines`, each ended by `terminator`; the last one without it when
    /// `finalNewline` is false.
    static func join(_ lines: [[UInt8]], terminator: [UInt8] = [0x0A], finalNewline: Bool = true) -> Data {
        var data = Data()
        for (index, line) in lines.enumerated() {
            data.append(contentsOf: line)
            if finalNewline || index < lines.count - 1 { data.append(contentsOf: terminator) }
        }
        return data
    }

    /// The lines of `data` without terminators (the `\n` split the merge itself uses).
    static func lines(_ data: Data) -> [[UInt8]] {
        guard !data.isEmpty else { return [] }
        var lines = data.split(separator: 0x0A, omittingEmptySubsequences: false).map { Array($0) }
        if data.last == 0x0A { lines.removeLast() }
        return lines
    }
}
