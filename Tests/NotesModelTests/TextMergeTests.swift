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
        // No trailing newline: appending changes the last line, so it merges apart from the top.
        ("a\nb", "a\nb\nc", "x\na\nb", "x\na\nb\nc"),
        ("a\nb", "a\nb\n", "a\nb", "a\nb\n"),
        // Appending after a last line with a newline, editing the first.
        ("a\nb\n", "a\nb\nc\n", "X\nb\n", "X\nb\nc\n"),
        // CRLF lines keep their endings.
        (
            "1\r\n2\r\n3\r\n4\r\n5\r\n", "1\r\nX\r\n3\r\n4\r\n5\r\n", "1\r\n2\r\n3\r\nY\r\n5\r\n",
            "1\r\nX\r\n3\r\nY\r\n5\r\n"
        ),
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

    @Test func linesBothSidesAppendedAreAllKeptTheRemoteSidesFirst() {
        #expect(Self.merged("a\nb\n", "a\nb\nL1\nL2\n", "a\nb\nR\n") == "a\nb\nR\nL1\nL2\n")
        #expect(Self.merged("a\nb\n", "a\nb\nR\n", "a\nb\nL1\nL2\n") == "a\nb\nL1\nL2\nR\n")
        // With an edit higher up on one side too.
        #expect(Self.merged("a\nb\n", "A\nb\nL\n", "a\nb\nR\n") == "A\nb\nR\nL\n")
    }

    @Test(arguments: [
        // Overlapping different changes.
        ("1\n2\n3\n", "1\nX\n3\n", "1\nY\n3\n"),
        // Different insertions at the same place.
        ("a\nb\n", "a\nX\nb\n", "a\nY\nb\n"),
        // A deletion against an edit of the same line.
        ("1\n2\n3\n", "1\n3\n", "1\nY\n3\n"),
        // Changes to neighbouring lines: diff3 cannot tell them apart safely.
        ("1\n2\n3\n4\n", "1\nX\n3\n4\n", "1\n2\nY\n4\n"),
        // Both made a file from nothing, differently.
        ("", "a\n", "b\n"),
        // Both appended different lines to a file without a final newline.
        ("a\nb", "a\nb\nc", "a\nb\nd"),
        // One side changed every line ending, the other one line.
        ("1\n2\n3\n", "1\r\n2\r\n3\r\n", "1\n2\nY\n"),
    ])
    func overlappingDifferentChangesClash(base: String, local: String, remote: String) {
        #expect(Self.merged(base, local, remote) == nil)
        #expect(Self.merged(base, remote, local) == nil)
    }

    @Test func bytesThatAreNotUTF8MergeToo() {
        let base = Data([0xFF, 0x0A, 0x80, 0x81, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFE, 0x0A])
        let local = Data([0xFF, 0x0A, 0x01, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFE, 0x0A])
        let remote = Data([0xFF, 0x0A, 0x80, 0x81, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFD, 0xFD])
        let expected = Data([0xFF, 0x0A, 0x01, 0x0A, 0x00, 0x0A, 0xC3, 0x0A, 0xFD, 0xFD])
        #expect(TextMerge.merge(base: base, local: local, remote: remote) == .merged(expected))
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

    @Test func aSixteenMebibyteNoteWithFewChangesMergesQuickly() throws {
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
        let clock = ContinuousClock()
        var result = TextMergeResult.clash
        let elapsed = clock.measure {
            result = TextMerge.merge(base: baseData, local: Self.joined(local), remote: Self.joined(remote))
        }
        print("16 MiB merge with 4 changes: \(elapsed)")
        #expect(result == .merged(Self.joined(expected)))
        // Not a benchmark: a quadratic diff would take hours, a linear one
        // well under a second. The ceiling is generous for a busy machine.
        #expect(elapsed < .seconds(120))
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
