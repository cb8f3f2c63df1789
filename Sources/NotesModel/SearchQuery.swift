/// A search as a person types it: words, `word*` prefixes and `"quoted
/// phrases"` (a phrase may end in `*` too, inside or after its closing
/// quote), all of which must match. Nothing
/// else is syntax: `AND`, `-`, `:` or `(` are words or separators like any
/// other, so no input can be malformed.
public struct SearchQuery: Sendable, Equatable {
    /// One thing that must match: a word or a phrase.
    public struct Part: Sendable, Equatable {
        /// The text as typed, without quotes or the final `*`.
        public var text: String
        /// Typed between double quotes: its words must appear in this order, side by side.
        public var isPhrase: Bool
        /// Ended in `*`: its last word matches any word that starts with it.
        public var isPrefix: Bool

        public init(text: String, isPhrase: Bool = false, isPrefix: Bool = false) {
            self.text = text
            self.isPhrase = isPhrase
            self.isPrefix = isPrefix
        }
    }

    /// Parts with at least one word in them, in the order typed.
    public var parts: [Part]

    /// At most this many parts are kept (a pasted page is not a query).
    public static let partsMax = 64

    public init(parts: [Part]) {
        self.parts = parts
    }

    /// Parses typed text. An unclosed quote runs to the end; control
    /// characters separate words; parts without a letter or digit are dropped.
    public init(_ text: String) {
        var parts: [Part] = []
        var current = ""
        var inPhrase = false
        var iterator = text.unicodeScalars.makeIterator()
        var pending = iterator.next()

        /// Ends a word typed outside quotes; trailing stars make it a prefix.
        func finishWord() {
            var text = current
            var prefix = false
            while text.unicodeScalars.last == "*" {
                text.unicodeScalars.removeLast()
                prefix = true
            }
            if Self.hasWord(text) { parts.append(Part(text: text, isPrefix: prefix)) }
            current = ""
        }

        /// Ends a phrase; a star at its end, inside or after the closing
        /// quote, makes its last word a prefix; other stars separate words.
        func finishPhrase(prefix: Bool) {
            var scalars = current.unicodeScalars
            while let last = scalars.last, last == " " { scalars.removeLast() }
            let starred = scalars.last == "*"
            let text = String(String.UnicodeScalarView(scalars.map { $0 == "*" ? " " : $0 }))
            if Self.hasWord(text) { parts.append(Part(text: text, isPhrase: true, isPrefix: prefix || starred)) }
            current = ""
        }

        while let scalar = pending {
            pending = iterator.next()
            if inPhrase {
                if scalar == "\"" {
                    inPhrase = false
                    let prefix = pending == "*"
                    while pending == "*" { pending = iterator.next() }
                    finishPhrase(prefix: prefix)
                } else {
                    current.unicodeScalars.append(Self.isSeparator(scalar) ? " " : scalar)
                }
            } else if scalar == "\"" {
                finishWord()
                inPhrase = true
            } else if Self.isSeparator(scalar) {
                finishWord()
            } else {
                current.unicodeScalars.append(scalar)
            }
        }
        if inPhrase {
            finishPhrase(prefix: false)
        } else {
            finishWord()
        }
        self.parts = Array(parts.prefix(Self.partsMax))
    }

    /// True when nothing in the query can match.
    public var isEmpty: Bool { parts.isEmpty }

    /// The words of every part, split as the index splits text, each with
    /// whether it is a prefix (the last word of a part typed with `*`).
    public var words: [(word: String, isPrefix: Bool)] {
        var result: [(String, Bool)] = []
        for part in parts {
            let words = Self.splitWords(part.text)
            for (index, word) in words.enumerated() {
                result.append((word, part.isPrefix && index == words.count - 1))
            }
        }
        return result
    }

    static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F
    }

    static func hasWord(_ text: String) -> Bool { !splitWords(text).isEmpty }

    /// Runs of letters, digits and combining marks, as the search index sees words.
    static func splitWords(_ text: String) -> [String] {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            var scanner = WordScanner(buffer)
            var words: [String] = []
            while let word = scanner.next() {
                words.append(String(decoding: UnsafeBufferPointer(rebasing: buffer[word.start..<word.end]), as: UTF8.self))
            }
            return words
        }
    }
}
