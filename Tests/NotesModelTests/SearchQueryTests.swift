import NotesModel
import Testing

@Suite struct SearchQueryTests {
    typealias Part = SearchQuery.Part

    static let cases: [(String, [Part])] = [
        ("milk eggs", [Part(text: "milk"), Part(text: "eggs")]),
        ("panc*", [Part(text: "panc", isPrefix: true)]),
        ("panc**", [Part(text: "panc", isPrefix: true)]),
        ("\"olive oil\"", [Part(text: "olive oil", isPhrase: true)]),
        ("\"olive oi\"*", [Part(text: "olive oi", isPhrase: true, isPrefix: true)]),
        ("\"olive oi*\"", [Part(text: "olive oi ", isPhrase: true, isPrefix: true)]),
        ("fry \"olive oil", [Part(text: "fry"), Part(text: "olive oil", isPhrase: true)]),
        ("a\"b c\"d", [Part(text: "a"), Part(text: "b c", isPhrase: true), Part(text: "d")]),
        ("* - \"\" ( ) :", []),
        ("AND OR NOT", [Part(text: "AND"), Part(text: "OR"), Part(text: "NOT")]),
        ("e-mail*", [Part(text: "e-mail", isPrefix: true)]),
        ("tab\there\u{0}nul", [Part(text: "tab"), Part(text: "here"), Part(text: "nul")]),
        ("crêpe 日本語", [Part(text: "crêpe"), Part(text: "日本語")]),
    ]

    @Test(arguments: cases)
    func typedTextBecomesWordsPrefixesAndPhrases(_ text: String, _ parts: [Part]) {
        #expect(SearchQuery(text).parts == parts)
    }

    @Test func theWordsOfAPrefixPartEndInThePrefix() {
        let words = SearchQuery("\"the pan\"* e-mail").words
        #expect(words.map(\.word) == ["the", "pan", "e", "mail"])
        #expect(words.map(\.isPrefix) == [false, true, false, false])
    }
}
