import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

/// `NotesStore.search` finds what people type: stems, prefixes, phrases, a
/// folder, title matches first, and binary bodies neither indexed nor shown.
@Suite struct SearchTests {
    @Test func aWordFindsItsOtherFormsAndItsSpellingWithoutDiacritics() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let pancakes = try store.createNote(in: .root, title: "Pancakes.md", body: Data(utf8: "Sunday breakfast\n"))
        let crepes = try store.createNote(in: .root, title: "dessert.md", body: Data(utf8: "Thin Crêpes with sugar\n"))
        let running = try store.createNote(in: .root, title: "log.md", body: Data(utf8: "I ran. Running daily.\n"))
        #expect(try store.search("pancake").map(\.noteID) == [pancakes])
        #expect(try store.search("PANCAKES").map(\.noteID) == [pancakes])
        #expect(try store.search("crepe").map(\.noteID) == [crepes])
        #expect(try store.search("crêpe").map(\.noteID) == [crepes])
        #expect(try store.search("runs").map(\.noteID) == [running])
        let hit = try #require(try store.search("crepe").first)
        #expect(hit.snippet == "Thin [Crêpes] with sugar")
        #expect(hit.bodyIsText)
        #expect(try store.search("run daily").first?.snippet == "I ran. [Running] [daily]")
    }

    @Test func aWordEndingInAStarFindsEveryWordStartingWithIt() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let pancakes = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "pancakes for two\n"))
        let pantry = try store.createNote(in: .root, title: "b.md", body: Data(utf8: "the pantry shelf\n"))
        _ = try store.createNote(in: .root, title: "c.md", body: Data(utf8: "a pan and a pot\n"))
        #expect(try store.search("panc*").map(\.noteID) == [pancakes])
        #expect(Set(try store.search("pant* panc*").map(\.noteID)).isEmpty)
        #expect(Set(try store.search("pan*").map(\.noteID)).count == 3)
        #expect(try store.search("pant*").map(\.noteID) == [pantry])
        #expect(try store.search("panc*").first?.snippet == "[pancakes] for two")
        // A phrase may end in a prefix too.
        #expect(try store.search("\"the pan*\"").map(\.noteID) == [pantry])
        #expect(try store.search("\"the pan\"*").map(\.noteID) == [pantry])
        #expect(try store.search("\"the pan\"").isEmpty)
    }

    @Test func aQuotedPhraseFindsItsWordsSideBySideInOrder() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let together = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "fry in olive oil\n"))
        let apart = try store.createNote(in: .root, title: "b.md", body: Data(utf8: "oil, then an olive\n"))
        #expect(Set(try store.search("olive oil").map(\.noteID)) == [together, apart])
        #expect(try store.search("\"olive oil\"").map(\.noteID) == [together])
        #expect(try store.search("\"olive oils\"").map(\.noteID) == [together])
        #expect(try store.search("\"oil olive\"").isEmpty)
        // An unclosed quote runs to the end of the query.
        #expect(try store.search("fry \"olive oil").map(\.noteID) == [together])
        #expect(try store.search("\"olive oil\"").first?.snippet == "fry in [olive] [oil]")
    }

    @Test func aPhraseIsRankedByRelevanceUpTo200MatchesAndNewestFirstAbove() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let relevant = try store.createNote(
            in: .root, title: "a.md", body: Data(String(repeating: "olive oil ", count: 30).utf8))
        var others: [NoteID] = []
        func add(_ count: Int) throws {
            for _ in 0..<count {
                let body = "olive oil and " + String(repeating: "other words ", count: 30)
                others.append(try store.createNote(in: .root, title: "n\(others.count).md", body: Data(body.utf8)))
            }
        }
        try add(199)
        #expect(try store.search("\"olive oil\"", limit: 1).map(\.noteID) == [relevant], "200 matches: ranked")
        try add(1)
        #expect(try store.search("\"olive oil\"", limit: 1).map(\.noteID) == others.suffix(1), "201: newest first")
        // Words alone stay ranked up to 1,000 matches.
        #expect(try store.search("olive oil", limit: 1).map(\.noteID) == [relevant])
    }

    @Test func aFolderFilterKeepsNotesInTheFolderAndTheFoldersInsideIt() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeFolders(path: ["Work"])
        let projects = try store.makeFolders(path: ["Work", "Projects"])
        let home = try store.makeFolders(path: ["Home"])
        let inWork = try store.createNote(in: work, title: "todo.md", body: Data(utf8: "budget review\n"))
        let inProjects = try store.createNote(in: projects, title: "plan.md", body: Data(utf8: "budget for Q3\n"))
        let inHome = try store.createNote(in: home, title: "money.md", body: Data(utf8: "budget at home\n"))
        let inRoot = try store.createNote(in: .root, title: "notes.md", body: Data(utf8: "budget\n"))
        #expect(Set(try store.search("budget").map(\.noteID)) == [inWork, inProjects, inHome, inRoot])
        #expect(Set(try store.search("budget", in: work).map(\.noteID)) == [inWork, inProjects])
        #expect(try store.search("budget", in: projects).map(\.noteID) == [inProjects])
        #expect(try store.search("budget", in: home).map(\.noteID) == [inHome])
        #expect(try store.search("budget", in: projects).first?.path == "/Work/Projects/plan.md")
        #expect(try store.search("budget", in: .root).count == 4)
    }

    @Test func notesWhoseTitleMatchesComeFirst() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        // Bodies that say "tomato" often would outrank a title by bm25 alone.
        var bodyOnly: [NoteID] = []
        for index in 0..<5 {
            let body = String(repeating: "tomato ", count: 40) + "\n"
            bodyOnly.append(try store.createNote(in: .root, title: "garden \(index).md", body: Data(body.utf8)))
        }
        let titled = try store.createNote(
            in: .root, title: "Tomatoes.md", body: Data(utf8: String(repeating: "a long note about other things ", count: 60)))
        let hits = try store.search("tomato")
        #expect(hits.first?.noteID == titled)
        #expect(Set(hits.dropFirst().map(\.noteID)) == Set(bodyOnly))
        #expect(try store.search("tomato", limit: 1).map(\.noteID) == [titled])
        #expect(try store.search("tomato", limit: 3).count == 3)
    }

    /// The start of a PNG file: magic, the IHDR chunk, then compressed data.
    static let png: Data = {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D]
        bytes += Array("IHDR".utf8) + [0, 0, 1, 0, 0, 0, 1, 0, 8, 6, 0, 0, 0, 0x5C, 0x72, 0xA8, 0x66]
        var state: UInt32 = 7
        for _ in 0..<600 {
            state = state &* 1_103_515_245 &+ 12_345
            bytes.append(UInt8(truncatingIfNeeded: state >> 16))
        }
        return Data(bytes) + Data(utf8: " zebra stripes ")
    }()

    @Test(arguments: [png, Data(repeating: 0xFF, count: 40) + Data(utf8: " zebra stripes IHDR")])
    func aBinaryBodyIsFoundByItsTitleOnlyAndShowsNoSnippet(body: Data) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "zebra.png", body: body)
        #expect(try store.search("ihdr").isEmpty)
        #expect(try store.search("stripes").isEmpty)
        let hit = try #require(try store.search("zebra").first)
        #expect(hit.noteID == id)
        #expect(hit.snippet == "")
        #expect(!hit.bodyIsText)
        // Once it is text, its words are found and shown.
        try store.replaceBody(of: id, with: Data(utf8: "black and white stripes\n"))
        #expect(try store.search("stripes").map(\.snippet) == ["black and white [stripes]"])
        try store.replaceBody(of: id, with: body)
        #expect(try store.search("stripes").isEmpty)
        try SearchIndexTests.expectIndexMatchesContent(store, fixture.databasePath)
    }

    @Test(arguments: [
        Data(utf8: "walrus\u{0}\u{0}narwhal\n"),  // a zero-filled gap (a write past the end)
        Data(utf8: "caf") + Data([0xE9]) + Data(utf8: " narwhal\n"),  // Latin-1
        Data(utf8: "torn ") + Data([0xE6, 0x97]) + Data(utf8: " narwhal\n"),  // half a character
    ])
    func textWithAFewOddBytesIsFoundByItsWordsButShowsNoSnippet(body: Data) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "odd.txt", body: body)
        let hit = try #require(try store.search("narwhal").first)
        #expect(hit.noteID == id)
        #expect(hit.snippet == "")
        #expect(!hit.bodyIsText)
        try SearchIndexTests.expectIndexMatchesContent(store, fixture.databasePath)
    }

    @Test func noQueryIsASyntaxError() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        _ = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "alpha beta AND or NOT near\n"))
        let pieces = [
            "alpha", "beta", " ", " ", "\"", "*", "(", ")", ":", "^", "-", "+", "'", "{", "}", "NEAR", "AND", "OR",
            "NOT", "\u{0}", "é", "日本", ",", "title:", "body:", "\\", "\t", "NEAR(", "%", "_",
        ]
        let seed = Seeds.one(20)
        var random = SplitMix64(seed: seed)
        for _ in 0..<2_000 {
            let query = (0..<random.int(1..<8)).map { _ in random.pick(pieces) }.joined()
            do {
                _ = try store.search(query)
            } catch {
                Issue.record("\(Seeds.describe(seed)): the query \(query.debugDescription) failed: \(error)")
                return
            }
        }
        #expect(try store.search("NOT").count == 1)
        #expect(try store.search("alpha OR zzz").isEmpty)
        #expect(try store.search("\"\"").isEmpty)
        #expect(try store.search("***").isEmpty)
        #expect(try store.search("title:alpha").isEmpty)
        #expect(try store.search("a.md").count == 1)
    }
}

/// The index stays exactly what the notes hold, through every writer.
@Suite struct SearchIndexTests {
    /// Brings the index up to date and checks it against one built afresh
    /// from the notes (every token, every position): a removal made with the
    /// wrong text leaves tokens behind that this finds.
    static func expectIndexMatchesContent(
        _ store: NotesStore, _ path: String, _ context: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try store.flushSearchIndex()
        let db = try Connection(path: path)
        try db.execute(
            """
            CREATE VIRTUAL TABLE temp.fresh USING fts5(
                title, body, content = '', tokenize = 'porter unicode61 remove_diacritics 2');
            CREATE VIRTUAL TABLE temp.fresh_titles USING fts5(
                title, content = '', tokenize = 'porter unicode61 remove_diacritics 2');
            CREATE VIRTUAL TABLE temp.live_terms USING fts5vocab(main, notes_fts, 'instance');
            CREATE VIRTUAL TABLE temp.fresh_terms USING fts5vocab(temp, fresh, 'instance');
            CREATE VIRTUAL TABLE temp.live_title_terms USING fts5vocab(main, notes_title_fts, 'instance');
            CREATE VIRTUAL TABLE temp.fresh_title_terms USING fts5vocab(temp, fresh_titles, 'instance');
            """)
        let rows = try db.query(
            "SELECT n.seq, n.title, \(NotesStore.noteBodySQL(of: "n")) FROM notes n WHERE n.deleted = 0"
        ) { ($0.int64(0), $0.string(1), $0.data(2)) }
        for (seq, title, body) in rows {
            try db.run(
                "INSERT INTO temp.fresh(rowid, title, body) VALUES (?, ?, ?)", seq, title,
                BodyText.looksBinary(body) ? Data() : body)
            try db.run("INSERT INTO temp.fresh_titles(rowid, title) VALUES (?, ?)", seq, title)
        }
        func terms(_ table: String) throws -> [String] {
            try db.query("SELECT term, doc, col, offset FROM \(table) ORDER BY term, doc, col, offset") {
                "\($0.string(0)) \($0.int64(1)) \($0.string(2)) \($0.int64(3))"
            }
        }
        #expect(try terms("temp.live_terms") == terms("temp.fresh_terms"), "\(context)", sourceLocation: sourceLocation)
        #expect(
            try terms("temp.live_title_terms") == terms("temp.fresh_title_terms"), "\(context)",
            sourceLocation: sourceLocation)
        try db.execute(
            """
            DROP TABLE temp.live_terms; DROP TABLE temp.fresh_terms; DROP TABLE temp.fresh;
            DROP TABLE temp.live_title_terms; DROP TABLE temp.fresh_title_terms; DROP TABLE temp.fresh_titles;
            """)
    }

    @Test func editsTruncationsChunkWritesRenamesAndDeletesKeepTheIndexExact() throws {
        var configuration = StoreConfiguration()
        configuration.chunkedBodyThresholdBytes = 64
        configuration.bodyChunkBytes = 16
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let seed = Seeds.one(8)
        var random = SplitMix64(seed: seed)
        let words = ["apple", "apples", "Äpfel", "running", "ran", "crêpe", "the", "zebra", "état", "日本語"]
        func text() -> Data {
            Data((0..<random.int(1..<40)).map { _ in random.pick(words) }.joined(separator: " ").utf8)
        }
        var files: [EntryRef] = []
        for index in 0..<6 { files.append(try store.createFile(in: .root, name: "n\(index).md").ref) }
        for step in 0..<300 {
            let ref = random.pick(files)
            guard case .note(let id) = ref else { continue }
            switch random.int(0..<7) {
            case 0: try store.write(ref, offset: Int64(random.int(0..<200)), bytes: text())
            case 1: try store.truncate(ref, to: Int64(random.int(0..<100)))
            case 2: try store.replaceBody(of: id, with: text())
            case 3: try store.write(ref, offset: Int64(random.int(0..<50)), bytes: Data([0xFF, 0x00]))
            case 4: _ = try store.search(random.pick(words))
            case 5:
                let name = try #require(try store.entry(for: ref)?.name)
                _ = try store.rename(from: .root, name: name, to: .root, newName: "r\(step) \(random.pick(words)).md")
            default:
                let name = try #require(try store.entry(for: ref)?.name)
                try store.removeFile(in: .root, name: name)
                files.removeAll { $0 == ref }
                files.append(try store.createFile(in: .root, name: "m\(step).md").ref)
            }
            if step % 25 == 0 {
                try Self.expectIndexMatchesContent(store, fixture.databasePath, "\(Seeds.describe(seed)), step \(step)")
            }
        }
        try Self.expectIndexMatchesContent(store, fixture.databasePath, Seeds.describe(seed))
    }
}

/// `PorterStemmer` gives what FTS5's `porter` tokenizer gives, so snippets
/// mark exactly the words the index matched.
@Suite struct PorterStemmerTests {
    static let suffixes = [
        "", "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "at", "bl", "iz", "y", "ational", "tional", "enci",
        "anci", "izer", "logi", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism",
        "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "ical", "ness", "icate", "iciti", "ful",
        "ative", "alize", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "sion",
        "tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "ly", "ingly", "ations", "ers", "bled",
        "ating", "izing", "ying", "ies", "hopping", "filing",
    ]

    static let words = [
        "caresses", "ponies", "ties", "caress", "cats", "feed", "agreed", "plastered", "bled", "motoring", "sing",
        "conflated", "troubled", "sized", "hopping", "tanned", "falling", "hissing", "fizzed", "failing", "filing",
        "happy", "sky", "relational", "conditional", "rational", "valenci", "hesitanci", "digitizer",
        "conformabli", "radicalli", "differentli", "vileli", "analogousli", "vietnamization", "predication",
        "operator", "feudalism", "decisiveness", "hopefulness", "callousness", "formaliti", "sensitiviti",
        "sensibiliti", "triplicate", "formative", "formalize", "electriciti", "electrical", "hopeful", "goodness",
        "revival", "allowance", "inference", "airliner", "gyroscopic", "adjustable", "defensible", "irritant",
        "replacement", "adjustment", "dependent", "adoption", "homologou", "communism", "activate", "angulariti",
        "homologous", "effective", "bowdlerize", "probate", "rate", "cease", "controll", "roll", "pancakes",
        "pancake", "crepes", "running", "yes", "eye", "bye", "oyster", "syzygy", "ability", "abilities",
    ]

    @Test func stemsAreWhatFTS5Indexes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("stems.sqlite"))
        try db.execute(
            """
            CREATE VIRTUAL TABLE words USING fts5(word, content = '', tokenize = 'porter ascii');
            CREATE VIRTUAL TABLE terms USING fts5vocab(words, 'instance');
            """)
        let seed = Seeds.one(3)
        var random = SplitMix64(seed: seed)
        let letters = Array("bcdfghjklmnprstvwxyzaeiouy")
        var all = Self.words
        for _ in 0..<20_000 {
            let stem = String((0..<random.int(1..<7)).map { _ in random.pick(letters) })
            all.append(stem + random.pick(Self.suffixes))
        }
        try db.transaction {
            for (index, word) in all.enumerated() {
                try db.run("INSERT INTO words(rowid, word) VALUES (?, ?)", Int64(index), word)
            }
        }
        let indexed = try db.query("SELECT doc, term FROM terms ORDER BY doc") { ($0.int(0), $0.string(1)) }
        #expect(indexed.count == all.count)
        var mismatches: [String] = []
        for (doc, term) in indexed {
            let word = all[doc]
            let stem = PorterStemmer.stem(word)
            if stem != term { mismatches.append("\(word): fts5 \(term), ours \(stem)") }
            // The start a snippet searches for is a start of the word itself.
            if !word.hasPrefix(String(stem.dropLast(PorterStemmer.stemTailBytesMax))) {
                mismatches.append("\(word) does not start with \(stem) less its tail")
            }
        }
        #expect(mismatches.isEmpty, "\(Seeds.describe(seed)): \(mismatches.prefix(20))")
    }
}
