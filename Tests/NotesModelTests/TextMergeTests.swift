import Foundation
import NotesModel
import Testing

@Suite struct TextMergeTests {
    /// The merge of three texts, or nil for a clash.
    static func merged(_ base: String, _ local: String, _ remote: String) -> String? {
        switch TextMerge.merge(base: Data(base.utf8), local: Data(local.utf8), remote: Data(remote.utf8)) {
        case .merged(let data): String(decoding: data, as: UTF8.self)
        case .clash: nil
        }
    }

    @Test(arguments: [
        // Different lines combine.
        ("1\n2\n3\n4\n5\n", "1\nX\n3\n4\n5\n", "1\n2\n3\nY\n5\n", "1\nX\n3\nY\n5\n"),
        // The same change on both sides is taken once.
        ("1\n2\n3\n4\n5\n", "1\nX\n3\n4\n5\n", "1\nX\n3\nY\n5\n", "1\nX\n3\nY\n5\n"),
        ("1\n2\n3\n", "1\nX\n3\n", "1\nX\n3\n", "1\nX\n3\n"),
        // Insertions at different places.
        ("a\nb\nc\n", "X\na\nb\nc\n", "a\nb\nc\nY\n", "X\na\nb\nc\nY\n"),
        // The same insertion at the same place, once.
        ("a\nb\nc\nd\n", "a\nX\nb\nc\nd\n", "a\nX\nb\nc\nY\n", "a\nX\nb\nc\nY\n"),
        ("a\n", "a\nX\n", "a\nX\n", "a\nX\n"),
        // A deletion and an edit elsewhere.
        ("1\n2\n3\n4\n5\n", "1\n3\n4\n5\n", "1\n2\n3\nY\n5\n", "1\n3\nY\n5\n"),
        // Both delete the same line; one also edits another.
        ("1\n2\n3\n4\n5\n", "1\n3\n4\n5\n", "1\n3\n4\nY\n", "1\n3\n4\nY\n"),
        // Everything deleted on one side, nothing changed on the other.
        ("1\n2\n", "", "1\n2\n", ""),
        // Empty files.
        ("", "", "", ""),
        ("", "a\n", "", "a\n"),
        ("", "a\n", "a\n", "a\n"),
        ("a\n", "", "a\n", ""),
        // Repeated lines (blank lines, braces) still align.
        (
            "{\n\n}\n{\n\n}\n{\n\n}\n", "{\nA\n}\n{\n\n}\n{\n\n}\n", "{\n\n}\n{\n\n}\n{\nB\n}\n",
            "{\nA\n}\n{\n\n}\n{\nB\n}\n"
        ),
    ])
    func changesThatDoNotOverlapCombine(base: String, local: String, remote: String, expected: String) {
        #expect(Self.merged(base, local, remote) == expected)
        #expect(Self.merged(base, remote, local) == expected)
    }

    @Test(arguments: [
        // Neighbouring lines changed.
        ("1\n2\n3\n4\n", "1\nX\n3\n4\n", "1\n2\nY\n4\n", "1\nX\nY\n4\n"),
        // The first and the last line of a two-line note.
        ("a\nb\n", "A\nb\n", "a\nB\n", "A\nB\n"),
        // A line deleted next to a changed one.
        ("1\n2\n3\n4\n", "1\n3\n4\n", "1\n2\nY\n4\n", "1\nY\n4\n"),
        // Two neighbouring lines deleted, one on each side.
        ("1\n2\n3\n4\n", "1\n3\n4\n", "1\n2\n4\n", "1\n4\n"),
        // Lines inserted just before a changed line, and just after one.
        ("1\n2\n3\n", "1\nNEW\n2\n3\n", "1\nTWO\n3\n", "1\nNEW\nTWO\n3\n"),
        ("1\n2\n3\n", "1\n2\nNEW\n3\n", "1\nTWO\n3\n", "1\nTWO\nNEW\n3\n"),
        // A block of changed lines right above another block.
        ("1\n2\n3\n4\n5\n6\n", "1\nA\nB\n4\n5\n6\n", "1\n2\n3\nC\nD\n6\n", "1\nA\nB\nC\nD\n6\n"),
        // CRLF lines keep their endings.
        ("1\r\n2\r\n3\r\n", "1\r\nX\r\n3\r\n", "1\r\n2\r\nY\r\n", "1\r\nX\r\nY\r\n"),
    ])
    func editsToAdjacentLinesMerge(base: String, local: String, remote: String, expected: String) {
        #expect(Self.merged(base, local, remote) == expected)
        #expect(Self.merged(base, remote, local) == expected)
    }

    @Test(arguments: [
        // Both appended.
        ("a\nb\n", "a\nb\nL1\nL2\n", "a\nb\nR\n", "a\nb\nR\nL1\nL2\n"),
        ("a\nb\n", "a\nb\nR\n", "a\nb\nL1\nL2\n", "a\nb\nL1\nL2\nR\n"),
        // With an edit higher up on one side too.
        ("a\nb\n", "A\nb\nL\n", "a\nb\nR\n", "A\nb\nR\nL\n"),
        // Both inserted different lines at the same place in the middle, and at the top.
        ("a\nb\n", "a\nL\nb\n", "a\nR\nb\n", "a\nR\nL\nb\n"),
        ("a\nb\n", "L\na\nb\n", "R\na\nb\n", "R\nL\na\nb\n"),
        // Both wrote into an empty note (the base is known to be empty).
        ("", "L\n", "R\n", "R\nL\n"),
        // Appends in CRLF.
        ("a\r\n", "a\r\nL\r\n", "a\r\nR\r\n", "a\r\nR\r\nL\r\n"),
        // Lines the other side's append repeats are kept twice: each side's block is kept whole.
        ("a\n", "a\nx\ny\n", "a\nx\n", "a\nx\nx\ny\n"),
    ])
    func insertsAtTheSamePointAreAllKeptTheServersFirst(
        base: String, local: String, remote: String, expected: String
    ) {
        #expect(Self.merged(base, local, remote) == expected)
    }

    @Test(arguments: [
        // Base without a final newline, both append without one: one line ending
        // joins the server's lines to ours, as the appends themselves did.
        ("a\nb", "a\nb\nc", "a\nb\nd", "a\nb\nd\nc"),
        ("a\r\nb", "a\r\nb\r\nc", "a\r\nb\r\nd", "a\r\nb\r\nd\r\nc"),
        // The server's append has no final newline, ours has: its last line
        // gets one (the text's own ending) so the lines stay apart.
        ("a\n", "a\nc\n", "a\nd", "a\nd\nc\n"),
        ("a\r\n", "a\r\nc\r\n", "a\r\nd", "a\r\nd\r\nc\r\n"),
        // Ours has none: the merge ends without one too.
        ("a\n", "a\nc", "a\nd\n", "a\nd\nc"),
        // Appending to a last line without a newline, editing the first line.
        ("a\nb", "a\nb\nc", "x\nb", "x\nb\nc"),
        ("a\nb", "a\nb\nc", "x\na\nb", "x\na\nb\nc"),
        // Changing the last line (no newline) next to an append after it.
        ("a\nb", "a\nB", "a\nb\nc", "a\nB\nc"),
        // Only a final newline added, an edit elsewhere: both kept.
        ("a\nb", "a\nb\n", "A\nb", "A\nb\n"),
        // The final newline taken off, an edit elsewhere: both kept.
        ("a\nb\n", "a\nb", "A\nb\n", "A\nb"),
        // The last line deleted on one side: the text ends as that side's does.
        ("a\nb", "a", "A\nb", "A"),
        ("a\nb", "a\n", "A\nb", "A\n"),
    ])
    func aMissingFinalNewlineStaysMissing(base: String, local: String, remote: String, expected: String) {
        #expect(Self.merged(base, local, remote) == expected)
    }

    @Test(arguments: [
        // Overlapping different changes.
        ("1\n2\n3\n", "1\nX\n3\n", "1\nY\n3\n"),
        // A deletion against an edit of the same line.
        ("1\n2\n3\n", "1\n3\n", "1\nY\n3\n"),
        // Changed ranges that share a line.
        ("1\n2\n3\n4\n", "1\nX\nX\n4\n", "1\n2\nY\nY\n"),
        // An insert between two lines the other side replaced.
        ("1\n2\n3\n4\n", "1\nX\n4\n", "1\n2\nNEW\n3\n4\n"),
        // The last line (no final newline) changed differently.
        ("a\nb", "a\nc", "a\nd"),
        // One side changed every line ending, the other one line.
        ("1\n2\n3\n", "1\r\n2\r\n3\r\n", "1\n2\nY\n"),
    ])
    func overlappingDifferentChangesClash(base: String, local: String, remote: String) {
        #expect(Self.merged(base, local, remote) == nil)
        #expect(Self.merged(base, remote, local) == nil)
    }

    @Test func withoutABaseTwoDifferentTextsMakeAConflictCopyNotADoubledNote() {
        let local = NoteContent(title: "n", body: Data("shared\nmine\n".utf8), folderID: nil)
        let remote = NoteContent(title: "n", body: Data("shared\ntheirs\n".utf8), folderID: nil)
        let outcome = ConflictPolicy.mergeNote(base: nil, local: local, remote: remote)
        #expect(outcome == NoteMergeOutcome(result: remote, conflictCopy: local))
    }

    @Test func bytesThatAreNotUTF8MergeToo() {
        let base = Data([0xFF, 0x0A, 0x80, 0x81, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFE, 0x0A])
        let local = Data([0xFF, 0x0A, 0x01, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFE, 0x0A])
        let remote = Data([0xFF, 0x0A, 0x80, 0x81, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFD, 0xFD])
        let expected = Data([0xFF, 0x0A, 0x01, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFD, 0xFD])
        #expect(TextMerge.merge(base: base, local: local, remote: remote) == .merged(expected))
        // Appends of invalid UTF-8 on both sides, and edits of neighbouring lines.
        let appendedLocal = base + Data([0xC0, 0xAF, 0x0A])
        let appendedRemote = base + Data([0xED, 0xA0, 0x80, 0x0A])
        #expect(
            TextMerge.merge(base: base, local: appendedLocal, remote: appendedRemote)
                == .merged(base + Data([0xED, 0xA0, 0x80, 0x0A, 0xC0, 0xAF, 0x0A])))
        let neighbour = Data([0xFF, 0x0A, 0x80, 0x81, 0x0A, 0x00, 0xFE, 0x0A, 0xC3, 0x0A, 0xFE, 0x0A])
        #expect(
            TextMerge.merge(base: base, local: local, remote: neighbour)
                == .merged(Data([0xFF, 0x0A, 0x01, 0x0A, 0x00, 0xFE, 0x0A, 0xC3, 0x0A, 0xFE, 0x0A])))
        // Without a final newline, bytes that are not UTF-8 still get the text's own line ending.
        let unterminated = Data([0xFF, 0x0D, 0x0A, 0x80])
        #expect(
            TextMerge.merge(
                base: unterminated, local: unterminated + Data([0x0D, 0x0A, 0xC3]),
                remote: unterminated + Data([0x0D, 0x0A, 0xFE]))
                == .merged(unterminated + Data([0x0D, 0x0A, 0xFE, 0x0D, 0x0A, 0xC3])))
    }

    @Test func mergingSlicedDataWorks() {
        // Data slices do not start at index 0; the merge must not care.
        let padded = Data("xx1\n2\n3\n4\n5\n".utf8)
        let base = padded.dropFirst(2)
        let result = TextMerge.merge(
            base: base, local: Data("1\nX\n3\n4\n5\n".utf8), remote: Data("1\n2\n3\nY\n5\n".utf8))
        #expect(result == .merged(Data("1\nX\n3\nY\n5\n".utf8)))
    }

    /// Just over 16 MiB of distinct lines.
    static func bigLines() -> [[UInt8]] {
        (0..<440_000).map { Array("line \($0): the quick brown fox jumps\n".utf8) }
    }

    static func joined(_ lines: [[UInt8]]) -> Data {
        var data = Data(capacity: lines.count * 42)
        for line in lines { data.append(contentsOf: line) }
        return data
    }

    @Test func aSixteenMebibyteNoteWithFewChangesMerges() throws {
        let base = Self.bigLines()
        let (localEdit, localInsert) = (
            Array("local edit near the top\n".utf8), Array("local line in the middle\n".utf8)
        )
        let remoteEdit = Array("remote edit near the end\n".utf8)
        var local = base
        local[3] = localEdit
        local.insert(localInsert, at: 200_000)
        var remote = base
        remote[439_990] = remoteEdit
        remote.remove(at: 100_000)
        var expected = base
        expected[3] = localEdit
        expected[439_990] = remoteEdit
        expected.insert(localInsert, at: 200_000)
        expected.remove(at: 100_000)
        let baseData = Self.joined(base)
        #expect(baseData.count > 16 * 1_048_576)
        let result = TextMerge.merge(base: baseData, local: Self.joined(local), remote: Self.joined(remote))
        // A quadratic diff would take hours here, a linear one well under a
        // second; scripts/bench-store reports the time (merge_16mib_ms).
        #expect(result == .merged(Self.joined(expected)))
    }

    @Test func aRewriteOfThousandsOfLinesStillMergesWithAnEditElsewhere() {
        // Over Myers' edit limit, so the patience split must find the kept lines.
        let base = (0..<6_000).map { Array("base line \($0)\n".utf8) }
        var local = base
        for index in stride(from: 0, to: 4_500, by: 3) { local[index] = Array("rewritten \(index)\n".utf8) }
        var remote = base
        remote[5_500] = Array("remote edit\n".utf8)
        var expected = local
        expected[5_500] = remote[5_500]
        let result = TextMerge.merge(base: Self.joined(base), local: Self.joined(local), remote: Self.joined(remote))
        #expect(result == .merged(Self.joined(expected)))
    }

    @Test func twoCompleteRewritesOfABigNoteClashQuickly() {
        let base = (0..<50_000).map { Array("base \($0)\n".utf8) }
        let local = (0..<50_000).map { Array("local \($0)\n".utf8) }
        let remote = (0..<50_000).map { Array("remote \($0)\n".utf8) }
        let result = TextMerge.merge(base: Self.joined(base), local: Self.joined(local), remote: Self.joined(remote))
        #expect(result == .clash)
    }
}
