import Foundation

extension TextMerge {
    /// True when every line of `part` appears in `whole`, in the same order
    /// (a line's final newline is ignored, so appending to a last line without
    /// one still counts). Taking `whole` then loses no line of `part`.
    public static func containsEveryLine(of part: Data, in whole: Data) -> Bool {
        let wanted = lines(part)
        guard !wanted.isEmpty else { return true }
        var next = 0
        for line in lines(whole) where line == wanted[next] {
            next += 1
            if next == wanted.count { return true }
        }
        return false
    }

    private static func lines(_ data: Data) -> [Data.SubSequence] {
        guard !data.isEmpty else { return [] }
        return data.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            // A body ending in a newline splits into a last, empty piece: not a line.
            (line.isEmpty && index > 0 && line.startIndex == data.endIndex) ? nil : line
        }
    }
}
