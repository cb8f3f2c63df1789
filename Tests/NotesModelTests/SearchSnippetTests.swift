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
        Case(query: "index", body: "indexing the index", excerpt: "indexing the [index]"),
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
        let filler = String(repeating: "word ", count: SearchSnippet.wordByWordBytesMax / 5 + 10)
        let body = Data(("first " + filler + "CAFÉ").utf8)
        #expect(SearchSnippet(query: "café", wordsMax: 2).excerpt(of: body) == "first word…")
        // Spelled as typed, a hit is found anywhere.
        let typed = Data(("first " + filler + "café").utf8)
        #expect(SearchSnippet(query: "café", wordsMax: 2, wordsBeforeHit: 1).excerpt(of: typed) == "…word [café]")
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

    @Test func everyHitTheByteSearchFindsIsAWholeWordEqualToAQueryWord() {
        // Seeded: random words from a small alphabet, so partial matches abound.
        var random = SplitMix64(seed: 7)
        let alphabet = Array("abAB é-")
        for _ in 0..<500 {
            let text = String((0..<40).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            let query = String((0..<2).map { _ in alphabet[Int(random.next() % 2)] })
            let excerpt = SearchSnippet(query: query, wordsMax: 40).excerpt(of: Data(text.utf8))
            for marked in Self.markedWords(in: excerpt) {
                #expect(marked.lowercased().folding(options: .diacriticInsensitive, locale: nil) == query.lowercased(),
                        "\(marked) marked for \(query) in \(text)")
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
