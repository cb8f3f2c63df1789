import Foundation
import NotesModel
import Testing
import TestSupport

@Suite struct NameCodecTests {
    @Test(arguments: [
        ("todo.md", false, "todo.md"),
        ("a/b", false, "a\u{2215}b"),
        ("a\0b", false, "a\u{2400}b"),
        ("//", true, "\u{2215}\u{2215}"),
        ("", false, "Untitled"),
        ("", true, "Untitled"),
        (".", false, "Untitled"),
        ("..", true, "Untitled"),
        ("...", false, "..."),
        (".notesfs", true, "notesfs"),
        (".notesfs", false, ".notesfs"),
        ("notesfs", true, "notesfs"),
        ("line one\nline two", false, "line one\nline two"),
        ("e\u{301}", false, "e\u{301}"),
        (" leading and trailing ", false, " leading and trailing "),
    ])
    func titlesAreShownWithStableSubstitutes(title: String, inRoot: Bool, expected: String) {
        let name = NameCodec.displayName(forTitle: title, inRoot: inRoot)
        #expect(Array(name.utf8) == Array(expected.utf8))
    }

    @Test func everyTitleMapsToAValidName() {
        for seed in Seeds.list(count: 3_000) {
            var random = SplitMix64(seed: seed)
            let title = RandomText.title(&random)
            for inRoot in [false, true] {
                let name = NameCodec.displayName(forTitle: title, inRoot: inRoot)
                #expect(NameCodec.isValidFileName(name), "seed \(seed): \(title.debugDescription.prefix(200))")
                #expect(name.utf8.count <= NameCodec.maxNameBytes, "seed \(seed)")
                #expect(!(inRoot && name == ".notesfs"), "seed \(seed)")
                // The same title always shows the same way: names are stable.
                #expect(
                    Array(NameCodec.displayName(forTitle: title, inRoot: inRoot).utf8) == Array(name.utf8),
                    "seed \(seed)")
                // A title that already is a fine name is shown as itself.
                if NameCodec.isValidFileName(title) && !(inRoot && title == ".notesfs") {
                    #expect(Array(name.utf8) == Array(title.utf8), "seed \(seed)")
                }
            }
        }
    }

    @Test func namesMadeInTheMountAreStoredAsTheTitleExactly() {
        for seed in Seeds.list(count: 2_000) {
            var random = SplitMix64(seed: seed)
            let name = RandomText.fileName(&random)
            #expect(NameCodec.isValidFileName(name), "seed \(seed)")
            let title = NameCodec.title(forName: name)
            #expect(Array(title.utf8) == Array(name.utf8), "seed \(seed)")
            // And it shows under the very name it was made with.
            #expect(
                Array(NameCodec.displayName(forTitle: title, inRoot: false).utf8) == Array(name.utf8), "seed \(seed)")
        }
    }

    @Test func decomposedNamesKeepTheirBytes() {
        let decomposed = "Cafe\u{301}.md"
        let precomposed = "Caf\u{E9}.md"
        #expect(Array(NameCodec.title(forName: decomposed).utf8) == Array(decomposed.utf8))
        #expect(
            Array(NameCodec.displayName(forTitle: precomposed, inRoot: true).utf8) != Array(decomposed.utf8))
    }

    @Test func longTitlesAreCutWithAStableHashBeforeTheExtension() {
        let first = String(repeating: "a", count: 300) + " one.md"
        let second = String(repeating: "a", count: 300) + " two.md"
        let firstName = NameCodec.displayName(forTitle: first, inRoot: false)
        let secondName = NameCodec.displayName(forTitle: second, inRoot: false)
        #expect(firstName.utf8.count <= 255)
        #expect(firstName.hasSuffix(".md"))
        #expect(firstName.hasPrefix(String(repeating: "a", count: 200)))
        #expect(firstName.contains("…"))
        #expect(firstName != secondName)
        #expect(NameCodec.displayName(forTitle: first, inRoot: false) == firstName)
    }

    @Test func cuttingNeverSplitsACharacter() throws {
        let family = "👩‍👩‍👧"  // one character, 18 bytes
        let title = String(repeating: family, count: 40) + ".txt"
        let name = NameCodec.displayName(forTitle: title, inRoot: false)
        let cut = try #require(name.firstIndex(of: "…"))
        let stem = name[..<cut]
        #expect(!stem.isEmpty)
        #expect(stem.allSatisfy { $0 == Character(family) })
        #expect(name.hasSuffix(".txt"))
        #expect(name.utf8.count <= 255)
    }

    @Test func aTitleThatIsOneHugeCharacterStillGetsAName() {
        let title = "e" + String(repeating: "\u{301}", count: 5_000)
        let name = NameCodec.displayName(forTitle: title, inRoot: false)
        #expect(NameCodec.isValidFileName(name))
        #expect(name.unicodeScalars.first == "e")
        #expect(name.utf8.count > 200)
    }

    @Test func substitutesThatGrowATitlePastTheLimitAreCut() {
        let title = String(repeating: "/", count: 200)  // 200 bytes, 600 once shown
        let name = NameCodec.displayName(forTitle: title, inRoot: false)
        #expect(NameCodec.isValidFileName(name))
        #expect(name.hasPrefix("\u{2215}\u{2215}"))
    }

    @Test(arguments: [
        ("", false),
        (".", false),
        ("..", false),
        ("...", true),
        ("a/b", false),
        ("/", false),
        ("a\0", false),
        (" ", true),
        ("\n", true),
        (".notesfs", true),
        ("\u{2215}", true),
        (String(repeating: "x", count: 255), true),
        (String(repeating: "x", count: 256), false),
        (String(repeating: "é", count: 127), true),
        (String(repeating: "é", count: 128), false),
    ])
    func fileNamesMadeInTheMountAreChecked(name: String, valid: Bool) {
        #expect(NameCodec.isValidFileName(name) == valid)
    }
}
