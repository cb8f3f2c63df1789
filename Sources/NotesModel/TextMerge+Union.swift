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
