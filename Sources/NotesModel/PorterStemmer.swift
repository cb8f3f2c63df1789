/// The Porter stemmer exactly as SQLite's FTS5 `porter` tokenizer applies it
/// to a folded token (lowercase, diacritics removed, UTF-8), so the search
/// snippet marks the words the index matched: `pancakes` and `pancake` both
/// stem to `pancak`.
///
/// It works on bytes: a byte outside ASCII counts as a consonant, and tokens
/// shorter than 3 or longer than 64 bytes are left alone, as FTS5 does. Two
/// details differ from Porter's paper and are kept because FTS5 has them:
/// the `*v*` condition counts a `y` anywhere but first as a vowel, and step 2
/// has `logi → log` and `bli → ble`. `PorterStemmerTests` check the result
/// against FTS5 itself.
public enum PorterStemmer {
    /// Tokens with fewer bytes are not stemmed.
    public static let tokenBytesMin = 3
    /// Tokens with more bytes are not stemmed.
    public static let tokenBytesMax = 64
    /// A stem and the token it came from agree on every byte but at most
    /// this many at the stem's end (a replaced suffix: `happy` → `happi`,
    /// `ability` → `able`), so a token whose stem is `s` starts with `s`
    /// minus its last `stemTailBytesMax` bytes.
    public static let stemTailBytesMax = 2

    /// The stem of a folded token.
    public static func stem(_ token: [UInt8]) -> [UInt8] {
        guard token.count >= tokenBytesMin && token.count <= tokenBytesMax else { return token }
        var word = Word(token)
        word.step1()
        word.step1c()
        word.apply(step2Rules)
        word.apply(step3Rules)
        word.apply(step4Rules)
        word.step5()
        return word.bytes
    }

    /// The stem of a folded token given as text.
    public static func stem(_ token: String) -> String {
        String(decoding: stem(Array(token.utf8)), as: UTF8.self)
    }

    // MARK: Rules

    enum Condition {
        /// The stem before the suffix has a measure above 0.
        case measureAbove0
        /// …above 1.
        case measureAbove1
        /// …above 1 and ends in `s` or `t` (for `-ion`).
        case measureAbove1EndingSOrT
        /// The stem holds a vowel.
        case hasVowel
        /// No condition.
        case always
    }

    struct Rule {
        var suffix: [UInt8]
        var replacement: [UInt8]
        var condition: Condition

        init(_ suffix: String, _ replacement: String, _ condition: Condition) {
            self.suffix = Array(suffix.utf8)
            self.replacement = Array(replacement.utf8)
            self.condition = condition
        }
    }

    // In each list the first suffix that ends the word decides, even when its
    // condition fails; the order within suffixes sharing their next-to-last
    // letter is FTS5's.
    static let eed = Rule("eed", "ee", .measureAbove0)
    static let step1bEed = [eed]
    // -ed and -ing never both end a word.
    static let step1bEdIng = [Rule("ed", "", .hasVowel), Rule("ing", "", .hasVowel)]
    static let step1bAfter = [Rule("at", "ate", .always), Rule("bl", "ble", .always), Rule("iz", "ize", .always)]

    static let step2Rules: [Rule] = [
        Rule("ational", "ate", .measureAbove0), Rule("tional", "tion", .measureAbove0),
        Rule("enci", "ence", .measureAbove0), Rule("anci", "ance", .measureAbove0),
        Rule("izer", "ize", .measureAbove0),
        Rule("logi", "log", .measureAbove0),
        Rule("bli", "ble", .measureAbove0), Rule("alli", "al", .measureAbove0), Rule("entli", "ent", .measureAbove0),
        Rule("eli", "e", .measureAbove0), Rule("ousli", "ous", .measureAbove0),
        Rule("ization", "ize", .measureAbove0), Rule("ation", "ate", .measureAbove0),
        Rule("ator", "ate", .measureAbove0),
        Rule("alism", "al", .measureAbove0), Rule("iveness", "ive", .measureAbove0),
        Rule("fulness", "ful", .measureAbove0), Rule("ousness", "ous", .measureAbove0),
        Rule("aliti", "al", .measureAbove0), Rule("iviti", "ive", .measureAbove0), Rule("biliti", "ble", .measureAbove0),
    ]

    static let step3Rules: [Rule] = [
        Rule("ical", "ic", .measureAbove0),
        Rule("ness", "", .measureAbove0),
        Rule("icate", "ic", .measureAbove0), Rule("iciti", "ic", .measureAbove0),
        Rule("ful", "", .measureAbove0),
        Rule("ative", "", .measureAbove0),
        Rule("alize", "al", .measureAbove0),
    ]

    static let step4Rules: [Rule] = [
        Rule("al", "", .measureAbove1),
        Rule("ance", "", .measureAbove1), Rule("ence", "", .measureAbove1),
        Rule("er", "", .measureAbove1),
        Rule("ic", "", .measureAbove1),
        Rule("able", "", .measureAbove1), Rule("ible", "", .measureAbove1),
        Rule("ant", "", .measureAbove1), Rule("ement", "", .measureAbove1), Rule("ment", "", .measureAbove1),
        Rule("ent", "", .measureAbove1),
        Rule("ion", "", .measureAbove1EndingSOrT), Rule("ou", "", .measureAbove1),
        Rule("ism", "", .measureAbove1),
        Rule("ate", "", .measureAbove1), Rule("iti", "", .measureAbove1),
        Rule("ous", "", .measureAbove1),
        Rule("ive", "", .measureAbove1),
        Rule("ize", "", .measureAbove1),
    ]

    /// The word being stemmed.
    struct Word {
        var bytes: [UInt8]

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var count: Int { bytes.count }

        func endsWith(_ suffix: [UInt8]) -> Bool {
            // FTS5 matches a suffix only when something is left before it.
            count > suffix.count && bytes[(count - suffix.count)...].elementsEqual(suffix)
        }

        static func isVowelLetter(_ byte: UInt8) -> Bool {
            byte == 0x61 || byte == 0x65 || byte == 0x69 || byte == 0x6F || byte == 0x75  // a e i o u
        }

        static let y: UInt8 = 0x79

        /// Whether the byte at `index` is a consonant, given whether the one
        /// before it is: a `y` after a consonant is a vowel, a `y` first is a
        /// consonant.
        func isConsonant(_ index: Int, afterConsonant previous: Bool) -> Bool {
            let byte = bytes[index]
            return !(Self.isVowelLetter(byte) || (byte == Self.y && previous))
        }

        /// Porter's m of the first `length` bytes: how many vowel runs are
        /// followed by a consonant. (No allocation: the snippet stems the
        /// words it shows.)
        func measure(_ length: Int) -> Int {
            var count = 0
            var previous = false
            for index in 0..<length {
                let consonant = isConsonant(index, afterConsonant: previous)
                if consonant && index > 0 && !previous { count += 1 }
                previous = consonant
            }
            return count
        }

        /// `*v*`: the first `length` bytes hold a vowel (FTS5: a `y` anywhere but first counts).
        func hasVowel(_ length: Int) -> Bool {
            (0..<length).contains { Self.isVowelLetter(bytes[$0]) || (bytes[$0] == Self.y && $0 > 0) }
        }

        /// `*o`: the first `length` bytes end consonant, vowel, consonant,
        /// the last not `w`, `x` or `y`.
        func endsCVC(_ length: Int) -> Bool {
            guard length >= 3 else { return false }
            let last = bytes[length - 1]
            guard last != 0x77 && last != 0x78 && last != Self.y else { return false }
            var previous = false
            var flags: (Bool, Bool, Bool) = (false, false, false)
            for index in 0..<length {
                previous = isConsonant(index, afterConsonant: previous)
                flags = (flags.1, flags.2, previous)
            }
            return flags.0 && !flags.1 && flags.2
        }

        func holds(_ condition: Condition, stemLength: Int) -> Bool {
            switch condition {
            case .measureAbove0: measure(stemLength) > 0
            case .measureAbove1: measure(stemLength) > 1
            case .measureAbove1EndingSOrT:
                (bytes[stemLength - 1] == 0x73 || bytes[stemLength - 1] == 0x74) && measure(stemLength) > 1
            case .hasVowel: hasVowel(stemLength)
            case .always: true
            }
        }

        /// Applies the first rule whose suffix ends the word, if its condition
        /// holds; true when the word changed.
        @discardableResult
        mutating func apply(_ rules: [Rule]) -> Bool {
            guard let rule = rules.first(where: { endsWith($0.suffix) }) else { return false }
            let stemLength = count - rule.suffix.count
            guard holds(rule.condition, stemLength: stemLength) else { return false }
            bytes.replaceSubrange(stemLength..., with: rule.replacement)
            return true
        }

        /// Steps 1a and 1b: plurals, `-ed` and `-ing`.
        mutating func step1() {
            // 1a: sses → ss, ies → i, s → (but ss stays).
            if bytes.last == 0x73 && count >= 2 {
                if bytes[count - 2] == 0x65 {
                    let sses = count > 4 && bytes[count - 4] == 0x73 && bytes[count - 3] == 0x73
                    let ies = count > 3 && bytes[count - 3] == 0x69
                    bytes.removeLast(sses || ies ? 2 : 1)
                } else if bytes[count - 2] != 0x73 {
                    bytes.removeLast()
                }
            }
            // 1b: eed → ee (m > 0); ed, ing → (when a vowel is left).
            let removedEnding: Bool
            if endsWith(PorterStemmer.eed.suffix) {
                apply(PorterStemmer.step1bEed)
                removedEnding = false
            } else {
                removedEnding = apply(PorterStemmer.step1bEdIng)
            }
            guard removedEnding else { return }
            // After removing -ed or -ing: at → ate, bl → ble, iz → ize; or a
            // doubled consonant loses one (not l, s or z); or a short word gets an e.
            if apply(PorterStemmer.step1bAfter) { return }
            guard let last = bytes.last else { return }
            if count >= 2, !Self.isVowelLetter(last), last != 0x6C, last != 0x73, last != 0x7A, last == bytes[count - 2] {
                bytes.removeLast()
            } else if measure(count) == 1 && endsCVC(count) {
                bytes.append(0x65)
            }
        }

        /// Step 1c: a final y after a vowel becomes i.
        mutating func step1c() {
            if bytes.last == Self.y && hasVowel(count - 1) { bytes[count - 1] = 0x69 }
        }

        /// Step 5: a final e goes (m > 1, or m = 1 and not *o); ll → l when m > 1.
        mutating func step5() {
            if bytes.last == 0x65 {
                let stem = count - 1
                let m = measure(stem)
                if m > 1 || (m == 1 && !endsCVC(stem)) { bytes.removeLast() }
            }
            if count > 1 && bytes[count - 1] == 0x6C && bytes[count - 2] == 0x6C && measure(count - 1) > 1 {
                bytes.removeLast()
            }
        }
    }
}
