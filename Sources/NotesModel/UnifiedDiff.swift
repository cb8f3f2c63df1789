import Foundation

/// A unified diff (`diff -u` format, three lines of context) of two texts, as
/// `notesfs conflicts` shows a note against its conflict copy. Bytes are kept as
/// they are; a last line without a newline is marked as diff marks it.
public enum UnifiedDiff {
    /// Lines of context around each change.
    public static let contextLines = 3

    /// The diff turning `old` into `new`, with `---`/`+++` headers naming them;
    /// empty when the texts are equal.
    public static func make(old: Data, new: Data, oldLabel: String, newLabel: String) -> Data {
        guard old != new else { return Data() }
        return old.withUnsafeBytes { oldBytes in
            new.withUnsafeBytes { newBytes in
                let (before, after) = (LineTable(oldBytes), LineTable(newBytes))
                var output = Data("--- \(oldLabel)\n+++ \(newLabel)\n".utf8)
                let steps = self.steps(before, after)
                for hunk in hunks(steps) {
                    output.append(header(hunk, steps))
                    for step in steps[hunk] {
                        switch step {
                        case .same(let line, _): append(line, of: before, prefix: " ", to: &output)
                        case .removed(let line): append(line, of: before, prefix: "-", to: &output)
                        case .added(let line): append(line, of: after, prefix: "+", to: &output)
                        }
                    }
                }
                return output
            }
        }
    }

    enum Step {
        case same(Int, Int)
        case removed(Int)
        case added(Int)

        var isChange: Bool {
            if case .same = self { return false }
            return true
        }
    }

    /// The edit script: kept lines, and in each gap the removed lines before the added ones.
    static func steps(_ before: LineTable, _ after: LineTable) -> [Step] {
        var steps: [Step] = []
        var next = 0
        for (line, keptAs) in LineDiff.keptLines(from: before, to: after).enumerated() {
            guard keptAs >= 0 else {
                steps.append(.removed(line))
                continue
            }
            while next < keptAs {
                steps.append(.added(next))
                next += 1
            }
            steps.append(.same(line, keptAs))
            next = keptAs + 1
        }
        while next < after.count {
            steps.append(.added(next))
            next += 1
        }
        return steps
    }

    /// Ranges of steps shown together: each change with its context, joined
    /// when their contexts meet.
    static func hunks(_ steps: [Step]) -> [Range<Int>] {
        var hunks: [Range<Int>] = []
        for (index, step) in steps.enumerated() where step.isChange {
            let range = max(0, index - contextLines)..<min(steps.count, index + contextLines + 1)
            if let last = hunks.last, last.upperBound >= range.lowerBound {
                hunks[hunks.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                hunks.append(range)
            }
        }
        return hunks
    }

    /// `@@ -start,count +start,count @@`, with diff's conventions: a count of 1
    /// is left out, and an empty side starts at the line before it.
    static func header(_ hunk: Range<Int>, _ steps: [Step]) -> Data {
        // Lines of each text before the hunk.
        var (oldBefore, newBefore) = (0, 0)
        for step in steps[..<hunk.lowerBound] {
            switch step {
            case .same: (oldBefore, newBefore) = (oldBefore + 1, newBefore + 1)
            case .removed: oldBefore += 1
            case .added: newBefore += 1
            }
        }
        var (oldCount, newCount) = (0, 0)
        for step in steps[hunk] {
            switch step {
            case .same: (oldCount, newCount) = (oldCount + 1, newCount + 1)
            case .removed: oldCount += 1
            case .added: newCount += 1
            }
        }
        func side(_ linesBefore: Int, _ count: Int) -> String {
            let start = count == 0 ? linesBefore : linesBefore + 1
            return count == 1 ? "\(start)" : "\(start),\(count)"
        }
        return Data("@@ -\(side(oldBefore, oldCount)) +\(side(newBefore, newCount)) @@\n".utf8)
    }

    static func append(_ line: Int, of table: LineTable, prefix: String, to output: inout Data) {
        output.append(contentsOf: prefix.utf8)
        let range = table.byteRange(of: line..<(line + 1))
        if let start = table.bytes.baseAddress, !range.isEmpty {
            output.append(start.assumingMemoryBound(to: UInt8.self) + range.lowerBound, count: range.count)
        }
        if !table.endsWithNewline(line..<(line + 1)) {
            output.append(contentsOf: "\n\\ No newline at end of file\n".utf8)
        }
    }
}
