import Foundation
import NotesModel
import Testing

@Suite struct UnifiedDiffTests {
    static func diff(_ old: String, _ new: String) -> String {
        String(decoding: UnifiedDiff.make(old: Data(old.utf8), new: Data(new.utf8), oldLabel: "a", newLabel: "b"),
               as: UTF8.self)
    }

    @Test func equalTextsHaveNoDiff() {
        #expect(Self.diff("x\n", "x\n") == "")
    }

    @Test func aChangedLineShowsWithThreeLinesOfContext() {
        let old = (1...10).map { "\($0)\n" }.joined()
        let new = old.replacingOccurrences(of: "5\n", with: "five\n")
        #expect(Self.diff(old, new) == "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n")
    }

    @Test func changesFarApartAreSeparateHunks() {
        let old = (1...20).map { "\($0)\n" }.joined()
        let new = old.replacingOccurrences(of: "\n2\n", with: "\nTWO\n").replacingOccurrences(of: "19\n", with: "")
        #expect(
            Self.diff(old, new)
                == "--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+TWO\n 3\n 4\n 5\n@@ -16,5 +16,4 @@\n 16\n 17\n 18\n-19\n 20\n")
    }

    @Test func linesAddedToAnEmptyTextAndAMissingFinalNewlineAreMarked() {
        #expect(Self.diff("", "a\n") == "--- a\n+++ b\n@@ -0,0 +1 @@\n+a\n")
        #expect(Self.diff("a\n", "a") == "--- a\n+++ b\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n")
    }

    @Test func bytesThatAreNotUTF8AreShownAsTheyAre() {
        let diff = UnifiedDiff.make(
            old: Data([0x61, 0x0A]), new: Data([0x61, 0x0A, 0xFF, 0x0A]), oldLabel: "a", newLabel: "b")
        #expect(diff == Data("--- a\n+++ b\n@@ -1 +1,2 @@\n a\n+".utf8) + Data([0xFF, 0x0A]))
    }
}

@Suite struct KeepBothTests {
    @Test(arguments: [
        // (note, copy, both): the copy's lines the note lacks, at the note's end.
        ("1\ntheirs\n3\n", "1\nmine\n3\n", "1\ntheirs\n3\nmine\n"),
        ("a\nb\n", "a\n", "a\nb\n"),
        ("a\nb\n", "x\na\ny\nb\nz\n", "a\nb\nx\ny\nz\n"),
        // The note's last line without a newline gets the note's own ending first.
        ("a\r\nb", "c\r\n", "a\r\nb\r\nc\r\n"),
        ("a", "b", "a\nb"),
        ("", "b\n", "b\n"),
    ])
    func keepingBothAppendsTheCopysOtherLines(note: String, copy: String, expected: String) {
        let result = TextMerge.appendingMissingLines(of: Data(copy.utf8), to: Data(note.utf8))
        #expect(String(decoding: result, as: UTF8.self) == expected)
    }
}
