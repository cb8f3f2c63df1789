import Foundation

/// Line-level three-way merge (diff3) of note bodies: changes to different lines
/// combine, the same change on both sides is taken once, lines both sides
/// appended are all kept (the remote side's first), and overlapping different
/// changes clash (the caller then keeps both texts).
public enum TextMerge {
    /// diff3 over a Myers line diff (patience for huge rewrites); lines keep their
    /// terminators; works on arbitrary bytes (split on \n) so non-UTF-8 bodies merge too.
    public static func merge(base: Data, local: Data, remote: Data) -> TextMergeResult {
        if local == remote || remote == base { return .merged(local) }
        if local == base { return .merged(remote) }
        return base.withUnsafeBytes { baseBytes in
            local.withUnsafeBytes { localBytes in
                remote.withUnsafeBytes { remoteBytes in
                    merge(LineTable(baseBytes), LineTable(localBytes), LineTable(remoteBytes))
                }
            }
        }
    }

    private static func merge(_ base: LineTable, _ local: LineTable, _ remote: LineTable) -> TextMergeResult {
        let localOf = LineDiff.keptLines(from: base, to: local)
        let remoteOf = LineDiff.keptLines(from: base, to: remote)
        var output = Output(capacity: max(local.bytes.count, remote.bytes.count))
        var (b, l, r) = (0, 0, 0)
        while b < base.count || l < local.count || r < remote.count {
            // A stable run: base lines kept, in place, on both sides.
            let stableStart = b
            while b < base.count && localOf[b] == l && remoteOf[b] == r {
                (b, l, r) = (b + 1, l + 1, r + 1)
            }
            if b > stableStart {
                output.append(stableStart..<b, of: base)
                continue
            }
            // An unstable chunk runs to the next base line kept on both sides (or the end).
            var next = b
            while next < base.count && (localOf[next] < 0 || remoteOf[next] < 0) { next += 1 }
            let localEnd = next < base.count ? localOf[next] : local.count
            let remoteEnd = next < base.count ? remoteOf[next] : remote.count
            // Kept pairs increase, so the chunk never runs backwards.
            precondition(localEnd >= l && remoteEnd >= r, "line alignment is not monotonic")
            let (baseChunk, localChunk, remoteChunk) = (b..<next, l..<localEnd, r..<remoteEnd)
            if local.lines(localChunk, equal: baseChunk, in: base) {
                output.append(remoteChunk, of: remote)
            } else if remote.lines(remoteChunk, equal: baseChunk, in: base)
                || local.lines(localChunk, equal: remoteChunk, in: remote)
            {
                output.append(localChunk, of: local)
            } else if baseChunk.isEmpty && next == base.count && base.count > 0
                && remote.endsWithNewline(remoteChunk) && local.endsWithNewline(localChunk)
            {
                // Both sides appended lines: keep both, the remote side's
                // first, so every machine merging this pair writes the same
                // bytes. (Different lines added in the middle, two notes made
                // from nothing, or appends without a final newline, whose last
                // line the other side's would run into, still clash.)
                output.append(remoteChunk, of: remote)
                output.append(localChunk, of: local)
            } else {
                return .clash
            }
            (b, l, r) = (next, localEnd, remoteEnd)
        }
        return .merged(output.data)
    }

    /// The merged bytes, copied a run of lines at a time.
    private struct Output {
        var data: Data

        init(capacity: Int) { data = Data(capacity: capacity) }

        mutating func append(_ lines: Range<Int>, of table: LineTable) {
            let range = table.byteRange(of: lines)
            guard !range.isEmpty, let start = table.bytes.baseAddress else { return }
            data.append(start.assumingMemoryBound(to: UInt8.self) + range.lowerBound, count: range.count)
        }
    }
}
