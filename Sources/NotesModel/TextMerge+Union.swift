import Foundation

extension TextMerge {
    /// Every line of `first` and every line of `second`, each in its order:
    /// the lines they share (by a line diff) once, and where they differ the
    /// lines of `first`, then those of `second`. A conflict copy takes a new
    /// clash this way, so it never loses a line of either.
    public static func union(_ first: Data, _ second: Data) -> Data {
        if first == second || second.isEmpty { return first }
        if first.isEmpty { return second }
        let ending = LineEnding.fallback(first, second)
        let (firstText, secondText) = (
            LineEnding.terminated(first, fallback: ending), LineEnding.terminated(second, fallback: ending)
        )
        return firstText.bytes.withUnsafeBytes { firstBytes in
            secondText.bytes.withUnsafeBytes { secondBytes in
                let a = Side(LineTable(firstBytes), addedEnding: firstText.addedEnding)
                let b = Side(LineTable(secondBytes), addedEnding: secondText.addedEnding)
                let kept = LineDiff.keptLines(from: a.table, to: b.table)
                var output = Output(capacity: first.count + second.count)
                var (i, j) = (0, 0)
                for (line, keptAs) in kept.enumerated() where keptAs >= 0 {
                    output.append(i..<line, of: a)
                    output.append(j..<keptAs, of: b)
                    // A shared line is copied from `second`, so at the end its ending is the newer one.
                    output.append(keptAs..<(keptAs + 1), of: b)
                    (i, j) = (line + 1, keptAs + 1)
                }
                output.append(i..<a.count, of: a)
                output.append(j..<b.count, of: b)
                // The last line copied always ends its text here.
                return output.finished(fallbackEnding: b.addedEnding)
            }
        }
    }
}

extension TextMerge {
    /// `text` with the lines of `other` it does not have (by a line diff)
    /// added at its end, in their order: what keeping both versions of a note
    /// and its conflict copy means. A last line without a newline gets the
    /// text's own line ending before anything is added after it.
    public static func appendingMissingLines(of other: Data, to text: Data) -> Data {
        guard !other.isEmpty, text != other else { return text }
        let ending = LineEnding.fallback(text, other)
        let otherText = LineEnding.terminated(other, fallback: ending)
        let mainText = LineEnding.terminated(text, fallback: ending)
        return otherText.bytes.withUnsafeBytes { otherBytes in
            mainText.bytes.withUnsafeBytes { mainBytes in
                let (otherTable, mainTable) = (LineTable(otherBytes), LineTable(mainBytes))
                let kept = LineDiff.keptLines(from: otherTable, to: mainTable)
                let missing = kept.indices.filter { kept[$0] < 0 }
                guard !missing.isEmpty else { return text }
                var output = Output(capacity: text.count + other.count + 2)
                output.append(0..<mainTable.count, of: Side(mainTable, addedEnding: mainText.addedEnding))
                let side = Side(otherTable, addedEnding: otherText.addedEnding)
                for line in missing { output.append(line..<(line + 1), of: side) }
                return output.finished(fallbackEnding: 0)
            }
        }
    }
}
