import Foundation

/// The short excerpt a search result shows: the words around the first place a
/// query word occurs in a note's body, each query word between markers.
///
/// A word matches as the search index matches it: split as the index splits
/// text (letters and digits are word characters), case and diacritics folded,
/// and stemmed (`PorterStemmer`), so `Pancakes` is marked for `pancake`; a
/// prefix (`panc*`) marks every word whose stem starts with its stem. The
/// first hit is found by a byte search for a start every matching word has
/// (the stem less its last bytes, and the word as typed), checked word by
/// word, so a result costs about one pass up to its first hit; only a body
/// where no such start occurs (the title matched, or a variant beginning
/// with a letter outside ASCII) is read word by word. SQLite's `snippet()`
/// tokenized every returned body twice and was most of a search's time
/// (docs/bench.md).
public struct SearchSnippet: Sendable {
    /// Words of the excerpt, hits included.
    public let wordsMax: Int
    /// Words shown before the first hit, when there are that many (fewer than `wordsMax`).
    public let wordsBeforeHit: Int
    public let open: String
    public let close: String
    public let ellipsis: String

    /// A query word as the index matches it.
    private struct Term: Sendable, Equatable {
        /// The stem of the folded word (UTF-8).
        var stem: [UInt8]
        /// Matches every word whose stem starts with `stem`.
        var isPrefix: Bool
        /// What every matching word starts with once folded: the stem less
        /// the bytes stemming may have replaced (the whole token when it is
        /// too short or too long to be stemmed). Checked before stemming a word.
        var start: [UInt8]
    }

    private let terms: [Term]
    /// Bit n of word n / 64 set when some term's stem starts with byte n:
    /// a word's stem starts with the word's first letter.
    private let firstBytes: [UInt64]
    /// Byte strings every matching word starts with (ASCII lowercased):
    /// each term's stem less its last bytes, and each query word as typed.
    private let needles: [[UInt8]]

    /// `query` is parsed as `notesfs search` parses it (words, `word*`, `"phrases"`).
    public init(
        query: String, wordsMax: Int = 12, wordsBeforeHit: Int = 4, open: String = "[", close: String = "]",
        ellipsis: String = "…"
    ) {
        self.init(
            query: SearchQuery(query), wordsMax: wordsMax, wordsBeforeHit: wordsBeforeHit, open: open, close: close,
            ellipsis: ellipsis)
    }

    /// Marks the words of a parsed query.
    public init(
        query: SearchQuery, wordsMax: Int = 12, wordsBeforeHit: Int = 4, open: String = "[", close: String = "]",
        ellipsis: String = "…"
    ) {
        precondition(wordsMax >= 1 && wordsBeforeHit >= 0)
        self.wordsMax = wordsMax
        self.wordsBeforeHit = min(wordsBeforeHit, wordsMax - 1)
        self.open = open
        self.close = close
        self.ellipsis = ellipsis
        var terms: [Term] = []
        var needles: [[UInt8]] = []
        var firstBytes = [UInt64](repeating: 0, count: 4)
        for (word, isPrefix) in query.words {
            let bytes = Array(word.utf8)
            let folded = bytes.withUnsafeBufferPointer { buffer -> [UInt8] in
                var scanner = WordScanner(buffer)
                guard let whole = scanner.next() else { return [] }
                return Self.fold(buffer, whole)
            }
            guard !folded.isEmpty else { continue }
            let stem = PorterStemmer.stem(folded)
            // A word that matches starts with the stem less the bytes stemming
            // may have replaced; a token too short or too long to be stemmed
            // matches only as it is (or, as a prefix, by its start).
            let stemmed = folded.count >= PorterStemmer.tokenBytesMin && folded.count <= PorterStemmer.tokenBytesMax
            let start = stemmed || isPrefix ? Array(stem.dropLast(PorterStemmer.stemTailBytesMax)) : stem
            let term = Term(stem: stem, isPrefix: isPrefix, start: start)
            if !terms.contains(term) { terms.append(term) }
            if let first = stem.first { firstBytes[Int(first) >> 6] |= 1 << UInt64(first & 63) }
            let typed = bytes.map(Self.asciiLowercased)
            for needle in [start, typed] where !needle.isEmpty && !needles.contains(needle) {
                needles.append(needle)
            }
        }
        self.terms = terms
        self.firstBytes = firstBytes
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

    /// Where the first word matching a query word starts, or nil.
    private func firstHit(in text: UnsafeBufferPointer<UInt8>) -> Int? {
        var best: Int?
        for needle in needles {
            var from = 0
            while let found = Self.firstWordStart(needle, in: text, from: from, before: best ?? text.count) {
                var scanner = WordScanner(text)
                scanner.skip(to: found)
                if let word = scanner.next(), word.start == found, isHit(text, word) {
                    best = found
                    break
                }
                from = found + 1
            }
        }
        if best != nil { return best }
        // No start occurs as bytes: read word by word (variants that begin
        // beyond ASCII), or find that only the title matched. Bounded: a
        // title-only match in a 16 MiB note shows how it begins.
        var scanner = WordScanner(text)
        while let word = scanner.next(), word.start < Self.wordByWordBytesMax {
            if isHit(text, word) { return word.start }
        }
        return nil
    }

    /// How far into a body the word-by-word search for variants reads.
    public static let wordByWordBytesMax = 256 * 1_024

    /// The first place from `from` where a word starts with `needle` (ASCII
    /// letters in any case), starting before `limit`.
    private static func firstWordStart(
        _ needle: [UInt8], in text: UnsafeBufferPointer<UInt8>, from: Int, before limit: Int
    ) -> Int? {
        let count = needle.count
        guard count > 0, count <= text.count else { return nil }
        let last = min(limit, text.count - count + 1)
        let head = needle[0]
        var offset = from
        let scanner = WordScanner(text)
        while offset < last {
            if asciiLowercased(text[offset]) == head {
                var index = 1
                while index < count && asciiLowercased(text[offset + index]) == needle[index] { index += 1 }
                if index == count && scanner.isWordBoundary(offset) { return offset }
            }
            offset += 1
        }
        return nil
    }

    private func isHit(_ text: UnsafeBufferPointer<UInt8>, _ word: WordScanner.Word) -> Bool {
        // Cheap first: the folded first letter must start some term's stem.
        let lead = word.ascii ? Self.asciiLowercased(text[word.start]) : nil
        if let lead, firstBytes[Int(lead) >> 6] & (1 << UInt64(lead & 63)) == 0 { return false }
        let folded = Self.fold(text, word)
        guard let first = folded.first, firstBytes[Int(first) >> 6] & (1 << UInt64(first & 63)) != 0 else {
            return false
        }
        // Stemming costs more than the rest: only a word that starts like a term is stemmed.
        guard terms.contains(where: { folded.starts(with: $0.start) }) else { return false }
        let stem = PorterStemmer.stem(folded)
        return terms.contains { term in term.isPrefix ? stem.starts(with: term.stem) : stem == term.stem }
    }

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
        var word = Word(start: position, end: position, ascii: true)
        while position < text.count {
            let (isWord, _, length) = classify(at: position)
            guard isWord else { break }
            if length > 1 { word.ascii = false }
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
