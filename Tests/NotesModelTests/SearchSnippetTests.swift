import Foundation
import NotesModel
import Testing
import TestSupport

@Suite struct SearchSnippetTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var query: String
        var body: String
        var excerpt: String
        var testDescription: String { "\(query) in \(body.prefix(30))" }
    }

    static let numbers = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"

    static let cases: [Case] = [
        Case(query: "eight", body: numbers,
             excerpt: "…four five six seven [eight] nine ten eleven twelve thirteen fourteen fifteen"),
        Case(query: "two", body: numbers, excerpt: "one [two] three four five six seven eight nine ten eleven twelve…"),
        Case(query: "world", body: "Hello, World!", excerpt: "Hello, [World]"),
        Case(query: "cafe", body: "un café noir", excerpt: "un [café] noir"),
        Case(query: "café", body: "un cafe noir", excerpt: "un [cafe] noir"),
        Case(query: "café", body: "LE CAFÉ NOIR", excerpt: "LE [CAFÉ] NOIR"),
        Case(query: "index", body: "indexing the index", excerpt: "[indexing] the [index]"),
        Case(query: "index", body: "the indexes", excerpt: "the [indexes]"),
        Case(query: "gamma alpha", body: "alpha beta gamma", excerpt: "[alpha] beta [gamma]"),
        Case(query: "日本語", body: "今日は 日本語 の本", excerpt: "今日は [日本語] の本"),
        Case(query: "absent", body: numbers, excerpt: "one two three four five six seven eight nine ten eleven twelve…"),
        Case(query: "anything", body: "", excerpt: ""),
        Case(query: "line", body: "first\nsecond line\nthird", excerpt: "first\nsecond [line]\nthird"),
    ]

    @Test(arguments: cases)
    func theExcerptShowsTheWordsAroundTheFirstHitWithHitsMarked(_ example: Case) {
        #expect(SearchSnippet(query: example.query).excerpt(of: Data(example.body.utf8)) == example.excerpt)
    }

    @Test func theExcerptCentresOnTheFirstSpellingAsTypedAndMarksVariantsAroundIt() {
        // "uber" is found by bytes; "Über" only by folding, which marks it in the window.
        let snippet = SearchSnippet(query: "uber", wordsMax: 4, wordsBeforeHit: 3)
        #expect(snippet.excerpt(of: Data("Über alles und uber".utf8)) == "[Über] alles und [uber]")
        #expect(snippet.excerpt(of: Data("mehr Über alles".utf8)) == "mehr [Über] alles")
    }

    @Test func theWordByWordSearchForVariantsStopsAtItsBound() {
        // "ÇA" shares no ASCII start with "ça": only reading word by word finds it.
        let filler = String(repeating: "word ", count: SearchSnippet.wordByWordBytesMax / 5 + 10)
        let body = Data(("first " + filler + "ÇA").utf8)
        #expect(SearchSnippet(query: "ça", wordsMax: 2).excerpt(of: body) == "first word…")
        // Spelled as typed, a hit is found anywhere.
        let typed = Data(("first " + filler + "ça").utf8)
        #expect(SearchSnippet(query: "ça", wordsMax: 2, wordsBeforeHit: 1).excerpt(of: typed) == "…word [ça]")
        // A variant that starts like the stem is found anywhere, too.
        let variant = Data(("first " + filler + "CAFÉS").utf8)
        #expect(SearchSnippet(query: "café", wordsMax: 2, wordsBeforeHit: 1).excerpt(of: variant) == "…word [CAFÉS]")
    }

    static let stemCases: [Case] = [
        Case(query: "pancake", body: "Sunday: Pancakes!", excerpt: "Sunday: [Pancakes]"),
        Case(query: "pancakes", body: "one pancake", excerpt: "one [pancake]"),
        Case(query: "crepe", body: "Des crêpes au sucre", excerpt: "Des [crêpes] au sucre"),
        Case(query: "happy", body: "happiness is happily happy", excerpt: "[happiness] is happily [happy]"),
        Case(query: "ability", body: "able abilities", excerpt: "able [abilities]"),
        Case(query: "run", body: "runs running ran", excerpt: "[runs] [running] ran"),
        Case(query: "panc*", body: "pan pancakes pancetta", excerpt: "pan [pancakes] [pancetta]"),
        Case(query: "\"olive oil\"", body: "olive and oil", excerpt: "[olive] and [oil]"),
        Case(query: "pan*", body: "a Pantry", excerpt: "a [Pantry]"),
        Case(query: "xy*", body: "x xy xyz", excerpt: "x [xy] [xyz]"),
    ]

    @Test(arguments: stemCases)
    func wordsAreMarkedByTheirStemAndPrefixesByTheirStart(_ example: Case) {
        #expect(SearchSnippet(query: example.query).excerpt(of: Data(example.body.utf8)) == example.excerpt)
    }

    @Test(arguments: [
        ("plain ascii\n", true), ("café 日本 🙂", true), ("", true), ("nul\u{0}byte", false),
    ])
    func textIsValidUTF8WithoutNulBytes(_ text: String, _ isText: Bool) {
        #expect(BodyText.isText(Data(text.utf8)) == isText)
    }

    @Test(arguments: [
        [0xFF], [0xC3], [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
        [0xF5, 0x80, 0x80, 0x80], [0x61, 0xE2, 0x82],
    ] as [[UInt8]])
    func invalidUTF8IsNotText(_ bytes: [UInt8]) {
        #expect(!BodyText.isText(Data(bytes)))
        #expect(BodyText.isText(Data([0xE2, 0x82, 0xAC])))
    }

    @Test func aBodyLooksBinaryWhenManyOfItsFirstBytesAreOdd() {
        var random: UInt64 = 1
        let noise = Data((0..<BodyText.sniffBytes).map { _ in
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: random >> 33)
        })
        #expect(BodyText.looksBinary(noise))
        #expect(BodyText.looksBinary(Data("a\u{0}b\u{0}c\u{0}".utf8)))  // UTF-16
        #expect(!BodyText.looksBinary(Data("plain text\twith tabs\r\n\u{1B}[1mbold\u{1B}[0m\n".utf8)))
        let latin1: [UInt8] = Array("Caf".utf8) + [0xE9] + Array(" au lait, cr".utf8) + [0xE8, 0x6D, 0x65]
        #expect(!BodyText.looksBinary(Data(latin1)))
        #expect(!BodyText.looksBinary(Data()))
        // Only the start is read: text after a binary start stays binary, and the other way round.
        #expect(BodyText.looksBinary(noise + Data(repeating: 0x61, count: 100_000)))
        #expect(!BodyText.looksBinary(Data(repeating: 0x61, count: BodyText.sniffBytes) + noise))
    }

    @Test func invalidUTF8IsShownWithReplacementCharactersAndSeparatesWords() {
        let body = Data([0x66, 0x6F, 0x6F, 0xFF, 0x62, 0x61, 0x72])  // foo, a stray byte, bar
        #expect(SearchSnippet(query: "bar").excerpt(of: body) == "foo\u{FFFD}[bar]")
    }

    @Test func aLongNoteIsCutOnBothSides() {
        let words = (1...500).map { "w\($0)" }
        let body = Data(words.joined(separator: " ").utf8)
        #expect(SearchSnippet(query: "w250").excerpt(of: body)
            == "…w246 w247 w248 w249 [w250] w251 w252 w253 w254 w255 w256 w257…")
    }

    @Test func everyHitIsAWholeWordWithTheStemOfAQueryWord() {
        // Seeded: random words from a small alphabet, so partial matches abound.
        let seed = Seeds.one(7)
        var random = SplitMix64(seed: seed)
        let alphabet = Array("abAB é-")
        for _ in 0..<500 {
            let text = String((0..<40).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            let query = String((0..<2).map { _ in alphabet[Int(random.next() % 2)] })
            let excerpt = SearchSnippet(query: query, wordsMax: 40).excerpt(of: Data(text.utf8))
            // The index matches by stem: "abe" stems to "ab".
            let stem = PorterStemmer.stem(query.lowercased())
            for marked in Self.markedWords(in: excerpt) {
                let folded = marked.lowercased().folding(options: .diacriticInsensitive, locale: nil)
                #expect(
                    PorterStemmer.stem(folded) == stem,
                    "\(Seeds.describe(seed)): \(marked) marked for \(query) in \(text)")
            }
        }
    }

    static func markedWords(in excerpt: String) -> [String] {
        var words: [String] = []
        var rest = Substring(excerpt)
        while let open = rest.firstIndex(of: "["), let close = rest[open...].firstIndex(of: "]") {
            words.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return words
    }
}
