/// Aligns the lines of two tables: which lines of `old` are kept in `new`, and as
/// which line. The merge needs only this; any valid alignment is safe, a poorer
/// one only turns some clean merges into clashes.
enum LineDiff {
    /// Myers gives up on a region after this many edits (its trace grows with the
    /// square of the edit count) ...
    static let myersEditsMax = 1_000
    /// ... or this many steps; the region is then split on lines that occur once on
    /// each side (patience diff) and the pieces are tried again.
    static let myersStepsMax = 2_000_000

    /// For each line of `old`, the line of `new` it is kept as, or -1 when it was
    /// removed. Kept pairs increase on both sides. Minimal (Myers) unless the sides
    /// differ by thousands of lines.
    static func keptLines(from old: LineTable, to new: LineTable) -> [Int] {
        var kept = [Int](repeating: -1, count: old.count)
        // A stack of regions still to align, so deep splits cannot overflow the call stack.
        var regions = [(old: 0..<old.count, new: 0..<new.count)]
        while let region = regions.popLast() {
            var (oldLow, oldHigh) = (region.old.lowerBound, region.old.upperBound)
            var (newLow, newHigh) = (region.new.lowerBound, region.new.upperBound)
            while oldLow < oldHigh && newLow < newHigh && old.line(oldLow, equals: newLow, in: new) {
                kept[oldLow] = newLow
                oldLow += 1
                newLow += 1
            }
            while oldLow < oldHigh && newLow < newHigh && old.line(oldHigh - 1, equals: newHigh - 1, in: new) {
                oldHigh -= 1
                newHigh -= 1
                kept[oldHigh] = newHigh
            }
            if oldLow == oldHigh || newLow == newHigh { continue }
            if myers(old, oldLow..<oldHigh, new, newLow..<newHigh, into: &kept) { continue }
            let anchors = uniqueCommonLines(old, oldLow..<oldHigh, new, newLow..<newHigh)
            // Without anchors nothing in the region is kept: a rewrite, merged as one change.
            guard !anchors.isEmpty else { continue }
            var previous = (old: oldLow, new: newLow)
            for anchor in anchors {
                kept[anchor.old] = anchor.new
                regions.append((previous.old..<anchor.old, previous.new..<anchor.new))
                previous = (anchor.old + 1, anchor.new + 1)
            }
            regions.append((previous.old..<oldHigh, previous.new..<newHigh))
        }
        return kept
    }

    /// Myers' O(ND) greedy diff of one region; records the kept lines and returns
    /// true, or returns false (recording nothing) when the region is over the limits.
    private static func myers(
        _ old: LineTable, _ oldRange: Range<Int>, _ new: LineTable, _ newRange: Range<Int>,
        into kept: inout [Int]
    ) -> Bool {
        let (oldCount, newCount) = (oldRange.count, newRange.count)
        let (oldStart, newStart) = (oldRange.lowerBound, newRange.lowerBound)
        let editsMax = min(oldCount + newCount, myersEditsMax)
        // frontier[offset + k]: the furthest x reached on diagonal k = x - y.
        let offset = editsMax + 1
        var frontier = [Int](repeating: 0, count: 2 * editsMax + 3)
        // The frontier after each step d, for k = -d, -d + 2, ..., d, at d * (d + 1) / 2 + (k + d) / 2.
        var trace: [Int] = []
        var steps = 0
        var edits = -1
        search: for d in 0...editsMax {
            for k in stride(from: -d, through: d, by: 2) {
                var x =
                    k == -d || (k != d && frontier[offset + k - 1] < frontier[offset + k + 1])
                    ? frontier[offset + k + 1] : frontier[offset + k - 1] + 1
                var y = x - k
                let snakeStart = x
                while x < oldCount && y < newCount && old.line(oldStart + x, equals: newStart + y, in: new) {
                    x += 1
                    y += 1
                }
                steps += 1 + x - snakeStart
                // Checked per diagonal: on repetitive text one step can follow many long runs.
                if steps > myersStepsMax { return false }
                frontier[offset + k] = x
                trace.append(x)
                if x >= oldCount && y >= newCount {
                    edits = d
                    break search
                }
            }
        }
        guard edits >= 0 else { return false }

        // Walk back from the end, recording the diagonal runs (kept lines) of the path.
        var (x, y) = (oldCount, newCount)
        var d = edits
        while d > 0 {
            let k = x - y
            let previousStep = (d - 1) * d / 2
            let previous = { (diagonal: Int) in trace[previousStep + (diagonal + d - 1) / 2] }
            let down = k == -d || (k != d && previous(k - 1) < previous(k + 1))
            let previousK = down ? k + 1 : k - 1
            let previousX = previous(previousK)
            let snakeStart = down ? previousX : previousX + 1
            while x > snakeStart {
                x -= 1
                y -= 1
                kept[oldStart + x] = newStart + y
            }
            (x, y) = (previousX, previousX - previousK)
            d -= 1
        }
        while x > 0 && y > 0 {
            x -= 1
            y -= 1
            kept[oldStart + x] = newStart + y
        }
        return true
    }

    /// The longest in-order set of lines that occur exactly once in each region and are
    /// equal: patience diff's anchors, which real edits almost never move.
    private static func uniqueCommonLines(
        _ old: LineTable, _ oldRange: Range<Int>, _ new: LineTable, _ newRange: Range<Int>
    ) -> [(old: Int, new: Int)] {
        struct Occurrences {
            var oldCount = 0
            var newCount = 0
            var newLine = -1
        }
        // Keyed by hash: lines that only share a hash count as repeated, so they are
        // merely not anchors.
        var occurrences: [UInt64: Occurrences] = [:]
        for line in oldRange { occurrences[old.hashes[line], default: Occurrences()].oldCount += 1 }
        for line in newRange {
            guard var entry = occurrences[new.hashes[line]] else { continue }
            entry.newCount += 1
            entry.newLine = line
            occurrences[new.hashes[line]] = entry
        }
        var candidates: [(old: Int, new: Int)] = []
        for line in oldRange {
            guard let entry = occurrences[old.hashes[line]], entry.oldCount == 1, entry.newCount == 1,
                old.line(line, equals: entry.newLine, in: new)
            else { continue }
            candidates.append((line, entry.newLine))
        }
        return longestIncreasing(candidates)
    }

    /// The longest subsequence of `pairs` (increasing in `old`) that also increases in
    /// `new`, by patience sorting in O(n log n).
    private static func longestIncreasing(_ pairs: [(old: Int, new: Int)]) -> [(old: Int, new: Int)] {
        var pileTops: [Int] = []  // index into pairs of the smallest top of each pile
        var below = [Int](repeating: -1, count: pairs.count)
        for (index, pair) in pairs.enumerated() {
            var (low, high) = (0, pileTops.count)
            while low < high {
                let middle = (low + high) / 2
                if pairs[pileTops[middle]].new < pair.new { low = middle + 1 } else { high = middle }
            }
            if low > 0 { below[index] = pileTops[low - 1] }
            if low == pileTops.count { pileTops.append(index) } else { pileTops[low] = index }
        }
        var result: [(old: Int, new: Int)] = []
        var index = pileTops.last ?? -1
        while index >= 0 {
            result.append(pairs[index])
            index = below[index]
        }
        return result.reversed()
    }
}
