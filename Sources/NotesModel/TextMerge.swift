import Foundation

/// Line-level three-way merge of note bodies. Each side's changes against the
/// base are hunks (base lines replaced by side lines, a pure insert replacing
/// none); hunks of the two sides that touch different base lines combine, even
/// on adjacent lines; inserts at the same point are all kept, the remote side's
/// first (once when both inserted the same lines); only hunks that share a base
/// line, or an insert inside the other side's changed lines, clash (the caller
/// then keeps both texts). docs/sync.md has the table with examples.
public enum TextMerge {
    /// Works on arbitrary bytes split on \n, so CRLF lines keep their \r and
    /// non-UTF-8 bodies merge too. A last line without a newline is compared as
    /// if it had one (the text's own line ending), so appending to it is an
    /// insert after it; the merged text ends without one where its last line
    /// did (docs/sync.md "How two versions of a note merge").
    public static func merge(base: Data, local: Data, remote: Data) -> TextMergeResult {
        if local == remote || remote == base { return .merged(local) }
        if local == base { return .merged(remote) }
        let ending = LineEnding.fallback(base, remote, local)
        let (baseText, localText, remoteText) = (
            LineEnding.terminated(base, fallback: ending), LineEnding.terminated(local, fallback: ending),
            LineEnding.terminated(remote, fallback: ending)
        )
        return baseText.bytes.withUnsafeBytes { baseBytes in
            localText.bytes.withUnsafeBytes { localBytes in
                remoteText.bytes.withUnsafeBytes { remoteBytes in
                    merge(
                        Side(LineTable(baseBytes), addedEnding: baseText.addedEnding),
                        Side(LineTable(localBytes), addedEnding: localText.addedEnding),
                        Side(LineTable(remoteBytes), addedEnding: remoteText.addedEnding))
                }
            }
        }
    }

    /// One of the three texts, as lines with every line terminated.
    struct Side {
        let table: LineTable
        /// Bytes of line ending added to an unterminated last line (0, 1 or 2).
        let addedEnding: Int

        init(_ table: LineTable, addedEnding: Int) {
            self.table = table
            self.addedEnding = addedEnding
        }

        var count: Int { table.count }
    }

    /// Base lines `base` replaced by side lines `side`; an insert replaces no base line.
    struct Hunk {
        var base: Range<Int>
        var side: Range<Int>

        var delta: Int { side.count - base.count }

        /// Whether a hunk of one side and a hunk (or cluster) of the other
        /// touch the same base text: they share a base line, or one inserts
        /// strictly inside the lines the other replaced. Two inserts at one
        /// point are not a clash (both are kept), nor are hunks that merely
        /// meet at a line boundary.
        func clashes(with other: Range<Int>) -> Bool {
            if base.isEmpty && other.isEmpty { return false }
            if base.isEmpty { return other.lowerBound < base.lowerBound && base.lowerBound < other.upperBound }
            if other.isEmpty { return base.lowerBound < other.lowerBound && other.lowerBound < base.upperBound }
            return base.lowerBound < other.upperBound && other.lowerBound < base.upperBound
        }

        /// The hunks turning `base` into a side, from the kept-line alignment, in base order.
        static func list(kept: [Int], sideCount: Int) -> [Hunk] {
            var hunks: [Hunk] = []
            var (base, side) = (0, 0)
            for (line, keptAs) in kept.enumerated() where keptAs >= 0 {
                if line > base || keptAs > side { hunks.append(Hunk(base: base..<line, side: side..<keptAs)) }
                (base, side) = (line + 1, keptAs + 1)
            }
            if kept.count > base || sideCount > side {
                hunks.append(Hunk(base: base..<kept.count, side: side..<sideCount))
            }
            return hunks
        }
    }

    private static func merge(_ base: Side, _ local: Side, _ remote: Side) -> TextMergeResult {
        let localHunks = Hunk.list(kept: LineDiff.keptLines(from: base.table, to: local.table), sideCount: local.count)
        let remoteHunks = Hunk.list(
            kept: LineDiff.keptLines(from: base.table, to: remote.table), sideCount: remote.count)
        var output = Output(capacity: max(local.table.bytes.count, remote.table.bytes.count))
        // The next base line to copy, and how far each side's lines are shifted from the base's there.
        var next = 0
        var (localShift, remoteShift) = (0, 0)
        var (l, r) = (0, 0)
        while l < localHunks.count || r < remoteHunks.count {
            let localHunk = l < localHunks.count ? localHunks[l] : nil
            let remoteHunk = r < remoteHunks.count ? remoteHunks[r] : nil
            if let localHunk, let remoteHunk, localHunk.base.isEmpty, remoteHunk.base.isEmpty,
                localHunk.base.lowerBound == remoteHunk.base.lowerBound
            {
                // Inserts at the same point: both kept, the remote side's first.
                output.appendStable(next..<localHunk.base.lowerBound, base, local, remote)
                if local.table.lines(localHunk.side, equal: remoteHunk.side, in: remote.table) {
                    output.append(remoteHunk.side, of: remote)
                } else {
                    output.append(remoteHunk.side, of: remote)
                    output.append(localHunk.side, of: local)
                }
                next = localHunk.base.upperBound
                (localShift, remoteShift) = (localShift + localHunk.delta, remoteShift + remoteHunk.delta)
                (l, r) = (l + 1, r + 1)
                continue
            }
            if let localHunk, let remoteHunk, localHunk.clashes(with: remoteHunk.base) {
                // A cluster of hunks that overlap, taken as one chunk of each side.
                var span = min(localHunk.base.lowerBound, remoteHunk.base.lowerBound)
                    ..< max(localHunk.base.upperBound, remoteHunk.base.upperBound)
                var (localDelta, remoteDelta) = (localHunk.delta, remoteHunk.delta)
                (l, r) = (l + 1, r + 1)
                while true {
                    if l < localHunks.count, localHunks[l].clashes(with: span) {
                        span = span.lowerBound..<max(span.upperBound, localHunks[l].base.upperBound)
                        localDelta += localHunks[l].delta
                        l += 1
                    } else if r < remoteHunks.count, remoteHunks[r].clashes(with: span) {
                        span = span.lowerBound..<max(span.upperBound, remoteHunks[r].base.upperBound)
                        remoteDelta += remoteHunks[r].delta
                        r += 1
                    } else {
                        break
                    }
                }
                output.appendStable(next..<span.lowerBound, base, local, remote)
                let localChunk = (span.lowerBound + localShift)..<(span.upperBound + localShift + localDelta)
                let remoteChunk = (span.lowerBound + remoteShift)..<(span.upperBound + remoteShift + remoteDelta)
                if local.table.lines(localChunk, equal: span, in: base.table) {
                    output.append(remoteChunk, of: remote)
                } else if remote.table.lines(remoteChunk, equal: span, in: base.table)
                    || local.table.lines(localChunk, equal: remoteChunk, in: remote.table)
                {
                    output.append(localChunk, of: local)
                } else {
                    return .clash
                }
                next = span.upperBound
                (localShift, remoteShift) = (localShift + localDelta, remoteShift + remoteDelta)
                continue
            }
            // The hunk that comes first in the base stands alone (an insert
            // before changed lines at the same point comes first).
            let takeLocal: Bool
            switch (localHunk, remoteHunk) {
            case (let localHunk?, let remoteHunk?):
                takeLocal =
                    (localHunk.base.lowerBound, localHunk.base.upperBound)
                    < (remoteHunk.base.lowerBound, remoteHunk.base.upperBound)
            case (.some, nil): takeLocal = true
            default: takeLocal = false
            }
            if takeLocal, let hunk = localHunk {
                output.appendStable(next..<hunk.base.lowerBound, base, local, remote)
                output.append(hunk.side, of: local)
                next = hunk.base.upperBound
                localShift += hunk.delta
                l += 1
            } else if let hunk = remoteHunk {
                output.appendStable(next..<hunk.base.lowerBound, base, local, remote)
                output.append(hunk.side, of: remote)
                next = hunk.base.upperBound
                remoteShift += hunk.delta
                r += 1
            }
        }
        output.appendStable(next..<base.count, base, local, remote)
        return .merged(output.finished(fallbackEnding: LineEnding.mergedAddedEnding(base, local, remote)))
    }

    /// The merged bytes, copied a run of lines at a time, and what is known
    /// about the last line so far: whether it ends its source text, and so
    /// whether the line ending added for the merge comes off again.
    struct Output {
        var data: Data
        /// The last line copied is the last line of its text(s).
        var lastLineEndsItsText = false
        /// Bytes of added line ending to take off when the output ends here.
        var addedEnding = 0

        init(capacity: Int) { data = Data(capacity: capacity) }

        /// Lines of one side's hunk.
        mutating func append(_ lines: Range<Int>, of side: Side) {
            guard !lines.isEmpty else { return }
            copy(lines, of: side.table)
            lastLineEndsItsText = lines.upperBound == side.count
            addedEnding = lastLineEndsItsText ? side.addedEnding : 0
        }

        /// Base lines neither side changed. At the end of the text, the last
        /// line ends with a line ending unless a side took it off (the side
        /// that changed that wins, as for titles).
        mutating func appendStable(_ lines: Range<Int>, _ base: Side, _ local: Side, _ remote: Side) {
            guard !lines.isEmpty else { return }
            copy(lines, of: base.table)
            lastLineEndsItsText = lines.upperBound == base.count
            addedEnding = lastLineEndsItsText ? LineEnding.mergedAddedEnding(base, local, remote) : 0
        }

        private mutating func copy(_ lines: Range<Int>, of table: LineTable) {
            let range = table.byteRange(of: lines)
            guard !range.isEmpty, let start = table.bytes.baseAddress else { return }
            data.append(start.assumingMemoryBound(to: UInt8.self) + range.lowerBound, count: range.count)
        }

        /// The bytes, without the added line ending where the text ends
        /// unterminated. When the last line copied did not end its text (the
        /// lines after it were deleted), `fallbackEnding` decides (the texts'
        /// own endings).
        func finished(fallbackEnding: Int) -> Data {
            let strip = lastLineEndsItsText ? addedEnding : fallbackEnding
            guard strip > 0, data.count >= strip, data.last == 0x0A else { return data }
            if strip == 2, data[data.index(data.endIndex, offsetBy: -2)] != 0x0D {
                return data.dropLast(1)
            }
            return data.dropLast(strip)
        }
    }
}
