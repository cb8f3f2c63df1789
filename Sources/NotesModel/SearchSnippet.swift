import Foundation

/// The short excerpt a search result shows: the words around the first place a
/// query word occurs in a note's body, each query word between markers.
///
/// Words are split as the search index splits them (letters and digits are
/// word characters; case and diacritics are ignored). The first hit is found
/// by a byte search for each query word as typed and as folded, so a result
/// costs one pass up to its first hit; only a body where neither spelling
/// occurs (the title matched, or a diacritic variant) is read word by word.
/// SQLite's `snippet()` tokenized every returned body twice and was most of a
/// search's time (docs/bench.md).
public struct SearchSnippet: Sendable {
    /// Words of the excerpt, hits included.
    public let wordsMax: Int
    /// Words shown before the first hit, when there are that many (fewer than `wordsMax`).
    public let wordsBeforeHit: Int
    public let open: String
    public let close: String
    public let ellipsis: String

    /// Folded query words as UTF-8 bytes.
    private let terms: [[UInt8]]
    /// Bit n set when some term has n letters (bit 63: 63 or more).
    private let termLetterCounts: UInt64
    /// Byte strings to look for: each term, and each query word as typed
    /// (ASCII lowercased), so `Café` in a body is found for the query `café`.
    private let needles: [[UInt8]]

    /// `query` is split into words the way the index splits text.
    public init(
        query: String, wordsMax: Int = 12, wordsBeforeHit: Int = 4, open: String = "[", close: String = "]",
        ellipsis: String = "…"
    ) {
        precondition(wordsMax >= 1 && wordsBeforeHit >= 0)
        self.wordsMax = wordsMax
        self.wordsBeforeHit = min(wordsBeforeHit, wordsMax - 1)
        self.open = open
        self.close = close
        self.ellipsis = ellipsis
        var terms: [[UInt8]] = []
        var needles: [[UInt8]] = []
        var counts: UInt64 = 0
        let bytes = Array(query.utf8)
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = WordScanner(buffer)
            while let word = scanner.next() {
                let folded = Self.fold(buffer, word)
                if !terms.contains(folded) { terms.append(folded) }
                counts |= Self.bit(String(decoding: folded, as: UTF8.self).unicodeScalars.count)
                let typed = buffer[word.start..<word.end].map(Self.asciiLowercased)
                for needle in [folded, typed] where !needle.isEmpty && !needles.contains(needle) {
                    needles.append(needle)
                }
            }
        }
        self.terms = terms
        self.termLetterCounts = counts
        self.needles = needles
    }

    /// The excerpt of `body` (bytes, normally UTF-8; anything else is shown with
    /// replacement characters). With no hit in the body it is the body's first words.
    public func excerpt(of body: Data) -> String {
        body.withUnsafeBytes { raw in
            excerpt(of: raw.bindMemory(to: UInt8.self))
        }
    }

    /// The excerpt of a UTF-8 buffer.
    public func excerpt(of text: UnsafeBufferPointer<UInt8>) -> String {
        var scanner = WordScanner(text)
        if let hit = firstHit(in: text) {
            var start = hit
            for _ in 0..<wordsBeforeHit {
                guard let previous = scanner.wordStart(before: start) else { break }
                start = previous
            }
            scanner.skip(to: start)
        }
        var window: [(word: WordScanner.Word, hit: Bool)] = []
        while window.count < wordsMax, let word = scanner.next() {
            window.append((word, isHit(text, word)))
        }
        guard let first = window.first else { return "" }
        var out = ""
        if first.word.start > 0 { out += ellipsis }
        var position = first.word.start
        for (word, hit) in window {
            out += Self.string(text, position..<word.start)
            let shown = Self.string(text, word.start..<word.end)
            out += hit ? open + shown + close : shown
            position = word.end
        }
        if scanner.next() != nil { out += ellipsis }
        return out
    }

    /// Where the first word equal to a query word starts, or nil.
    private func firstHit(in text: UnsafeBufferPointer<UInt8>) -> Int? {
        var best: Int?
        for needle in needles {
            if let found = Self.firstWholeWord(needle, in: text, before: best ?? text.count) { best = found }
        }
        if best != nil { return best }
        // Neither spelling occurs as bytes: read word by word (diacritic and
        // case variants beyond ASCII), or find that only the title matched.
        // Bounded: a title-only match in a 16 MiB note shows how it begins.
        var scanner = WordScanner(text)
        while let word = scanner.next(), word.start < Self.wordByWordBytesMax {
            if isHit(text, word) { return word.start }
        }
        return nil
    }

    /// How far into a body the word-by-word search for variants reads.
    public static let wordByWordBytesMax = 256 * 1_024

    /// The first place `needle` occurs (ASCII letters in any case) as a whole
    /// word starting before `limit`.
    private static func firstWholeWord(_ needle: [UInt8], in text: UnsafeBufferPointer<UInt8>, before limit: Int)
        -> Int?
    {
        let count = needle.count
        guard count > 0, count <= text.count else { return nil }
        let last = min(limit, text.count - count + 1)
        let head = needle[0]
        var offset = 0
        let scanner = WordScanner(text)
        while offset < last {
            if asciiLowercased(text[offset]) == head {
                var index = 1
                while index < count && asciiLowercased(text[offset + index]) == needle[index] { index += 1 }
                if index == count && scanner.isWordBoundary(offset) && scanner.isWordBoundary(offset + count) {
                    return offset
                }
            }
            offset += 1
        }
        return nil
    }

    private func isHit(_ text: UnsafeBufferPointer<UInt8>, _ word: WordScanner.Word) -> Bool {
        guard termLetterCounts & Self.bit(word.letterCount) != 0 else { return false }
        if word.ascii {
            // Compare lowercased bytes in place, no allocation.
            let length = word.end - word.start
            return terms.contains { term in
                guard term.count == length else { return false }
                for index in 0..<length where Self.asciiLowercased(text[word.start + index]) != term[index] {
                    return false
                }
                return true
            }
        }
        return terms.contains(Self.fold(text, word))
    }

    private static func bit(_ letters: Int) -> UInt64 { 1 << UInt64(min(letters, 63)) }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// Lowercased, diacritics removed, as UTF-8 bytes.
    private static func fold(_ text: UnsafeBufferPointer<UInt8>, _ word: WordScanner.Word) -> [UInt8] {
        if word.ascii { return text[word.start..<word.end].map(asciiLowercased) }
        let folded = string(text, word.start..<word.end)
            .folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        // Combining marks left over from decomposed input are not letters.
        let scalars = folded.unicodeScalars.filter { !$0.properties.generalCategory.isMark }
        return Array(String(String.UnicodeScalarView(scalars)).utf8)
    }

    private static func string(_ text: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: text[range]), as: UTF8.self)
    }
}

/// Splits UTF-8 bytes into words: runs of letters, digits and combining marks.
/// Invalid UTF-8 separates words.
struct WordScanner {
    struct Word {
        var start: Int
        var end: Int
        /// Every byte is ASCII.
        var ascii: Bool
        /// Scalars that are not combining marks.
        var letterCount: Int
    }

    private let text: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ text: UnsafeBufferPointer<UInt8>) {
        self.text = text
    }

    /// Moves to `offset` (a word start or a separator) in either direction.
    mutating func skip(to offset: Int) {
        position = min(max(0, offset), text.count)
    }

    /// True when `offset` is not inside a word: the scalars on its two sides are
    /// not both word characters.
    func isWordBoundary(_ offset: Int) -> Bool {
        guard offset > 0 && offset < text.count else { return true }
        guard let before = scalarStart(before: offset), classify(at: before).isWord else { return true }
        return !classify(at: offset).isWord
    }

    /// The start of the word before `offset` (skipping separators), or nil.
    func wordStart(before offset: Int) -> Int? {
        var position = offset
        // Back over separators, then over the word's characters.
        while let start = scalarStart(before: position), !classify(at: start).isWord { position = start }
        guard let last = scalarStart(before: position) else { return nil }
        position = last
        while let start = scalarStart(before: position), classify(at: start).isWord { position = start }
        return position
    }

    /// The start of the scalar that ends at `offset`; a stray byte counts alone.
    private func scalarStart(before offset: Int) -> Int? {
        guard offset > 0 else { return nil }
        var start = offset - 1
        while start > 0 && offset - start < 4 && text[start] & 0xC0 == 0x80 { start -= 1 }
        return classify(at: start).length == offset - start ? start : offset - 1
    }

    mutating func next() -> Word? {
        // Find the start of a word.
        while position < text.count {
            let (isWord, _, length) = classify(at: position)
            if isWord { break }
            position += length
        }
        guard position < text.count else { return nil }
        var word = Word(start: position, end: position, ascii: true, letterCount: 0)
        while position < text.count {
            let (isWord, isMark, length) = classify(at: position)
            guard isWord else { break }
            if length > 1 { word.ascii = false }
            if !isMark { word.letterCount += 1 }
            position += length
        }
        word.end = position
        return word
    }

    /// Whether the scalar at `offset` belongs to a word, whether it is a
    /// combining mark, and its length in bytes (1 for an invalid byte).
    private func classify(at offset: Int) -> (isWord: Bool, isMark: Bool, length: Int) {
        let lead = text[offset]
        if lead < 0x80 {
            let isWord =
                (lead >= 0x30 && lead <= 0x39) || (lead >= 0x41 && lead <= 0x5A) || (lead >= 0x61 && lead <= 0x7A)
            return (isWord, false, 1)
        }
        let length: Int
        var value: UInt32
        switch lead {
        case 0xC2...0xDF: (length, value) = (2, UInt32(lead & 0x1F))
        case 0xE0...0xEF: (length, value) = (3, UInt32(lead & 0x0F))
        case 0xF0...0xF4: (length, value) = (4, UInt32(lead & 0x07))
        default: return (false, false, 1)
        }
        guard offset + length <= text.count else { return (false, false, 1) }
        for index in 1..<length {
            let byte = text[offset + index]
            guard byte & 0xC0 == 0x80 else { return (false, false, 1) }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        guard let scalar = Unicode.Scalar(value) else { return (false, false, 1) }
        let category = scalar.properties.generalCategory
        if category.isMark { return (true, true, length) }
        switch category {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber, .privateUse:
            return (true, false, length)
        default:
            return (false, false, length)
        }
    }
}

extension Unicode.GeneralCategory {
    var isMark: Bool {
        self == .nonspacingMark || self == .spacingMark || self == .enclosingMark
    }
}
