import Foundation
import NotesModel
import Testing
import TestSupport

/// Seeded property tests of the merge: each seed builds a base and two edited sides.
/// A failure names its seed; rerun it alone with `NOTESFS_SEED=<seed>`.
@Suite struct TextMergePropertyTests {
    struct Case {
        var base: [[UInt8]]
        var local: [[UInt8]]
        var remote: [[UInt8]]
        var terminator: [UInt8]
        var finalNewline: Bool

        init(seed: UInt64) {
            var random = SplitMix64(seed: seed)
            base = RandomText.baseLines(&random, tag: "s\(seed)")
            local = RandomText.edited(base, &random, tag: "local", percent: random.int(0..<50))
            remote = RandomText.edited(base, &random, tag: "remote", percent: random.int(0..<50))
            terminator = random.percent(20) ? [0x0D, 0x0A] : [0x0A]
            finalNewline = random.percent(80)
        }

        func data(_ lines: [[UInt8]]) -> Data {
            RandomText.join(lines, terminator: terminator, finalNewline: finalNewline)
        }
    }

    @Test func mergingWithAnUnchangedSideReturnsTheOtherSide() {
        for seed in Seeds.list(count: 500) {
            let example = Case(seed: seed)
            let (base, local) = (example.data(example.base), example.data(example.local))
            #expect(TextMerge.merge(base: base, local: local, remote: base) == .merged(local), "seed \(seed)")
            #expect(TextMerge.merge(base: base, local: base, remote: local) == .merged(local), "seed \(seed)")
            #expect(TextMerge.merge(base: base, local: local, remote: local) == .merged(local), "seed \(seed)")
        }
    }

    /// Whether it merges does not depend on which side is local; what it
    /// makes differs only in the order of lines both sides appended (the
    /// remote side's first), so both results hold the same lines.
    @Test func theMergeDoesNotDependOnWhichSideIsLocal() {
        func sortedLines(_ result: TextMergeResult) -> [Data]? {
            guard case .merged(let data) = result else { return nil }
            return data.split(separator: 0x0A, omittingEmptySubsequences: false).map { Data($0) }
                .sorted { $0.lexicographicallyPrecedes($1) }
        }
        for seed in Seeds.list(count: 500) {
            let example = Case(seed: seed)
            let (base, local, remote) = (
                example.data(example.base), example.data(example.local), example.data(example.remote)
            )
            let forward = TextMerge.merge(base: base, local: local, remote: remote)
            let backward = TextMerge.merge(base: base, local: remote, remote: local)
            #expect(sortedLines(forward) == sortedLines(backward), "seed \(seed)")
        }
    }

    @Test func everyLineAddedOnEitherSideIsInTheMergeOrTheConflictCopy() {
        var clashes = 0
        for seed in Seeds.list(count: 500) {
            let example = Case(seed: seed)
            let base = NoteContent(title: "n.md", body: example.data(example.base), folderID: nil)
            let local = NoteContent(title: "n.md", body: example.data(example.local), folderID: nil)
            let remote = NoteContent(title: "n.md", body: example.data(example.remote), folderID: nil)
            let outcome = ConflictPolicy.mergeNote(base: base, local: local, remote: remote)
            let kept = Set(RandomText.lines(outcome.result?.body ?? Data()))
                .union(RandomText.lines(outcome.conflictCopy?.body ?? Data()))
            let baseLines = Set(RandomText.lines(base.body))
            for line in RandomText.lines(local.body) + RandomText.lines(remote.body) where !baseLines.contains(line) {
                #expect(kept.contains(line), "seed \(seed): lost \(String(decoding: line, as: UTF8.self))")
            }
            if outcome.conflictCopy != nil { clashes += 1 }
        }
        // The generator must exercise both outcomes, or the property says little.
        #expect(clashes > 50 && clashes < 450, "\(clashes) clashes in 500 seeds")
    }

    @Test func aMergeKeepsUntouchedLinesAndHonoursDeletions() {
        for seed in Seeds.list(count: 500) {
            let example = Case(seed: seed)
            guard
                case .merged(let merged) = TextMerge.merge(
                    base: example.data(example.base), local: example.data(example.local),
                    remote: example.data(example.remote))
            else { continue }
            // Lines as the merge sees them (with a CR when the text uses CRLF).
            let (base, local, remote) = (
                RandomText.lines(example.data(example.base)), RandomText.lines(example.data(example.local)),
                RandomText.lines(example.data(example.remote))
            )
            let result = RandomText.lines(merged)
            let everywhere = base + local + remote
            for line in base where everywhere.filter({ $0 == line }).count <= 3 {
                // A line that occurs at most once in each text.
                let (inLocal, inRemote, inResult) = (local.contains(line), remote.contains(line), result.contains(line))
                if inLocal && inRemote { #expect(inResult, "seed \(seed): an untouched line was dropped") }
                if !inLocal || !inRemote { #expect(!inResult, "seed \(seed): a deleted line came back") }
            }
            let madeUp = result.filter { !everywhere.contains($0) }
            #expect(madeUp.isEmpty, "seed \(seed): the merge made up a line")
        }
    }

    @Test func editsOnEitherSideOfAnUntouchedLineAlwaysMerge() {
        for seed in Seeds.list(count: 500) {
            var random = SplitMix64(seed: seed)
            var base = RandomText.baseLines(&random, tag: "s\(seed)")
            let separator = random.int(0..<(base.count + 1))
            base.insert(Array("separator \(seed)".utf8), at: separator)
            let localPart = RandomText.edited(Array(base[..<separator]), &random, tag: "local")
            let remotePart = RandomText.edited(Array(base[(separator + 1)...]), &random, tag: "remote")
            let local = localPart + base[separator...]
            let remote = base[...separator] + remotePart
            let expected = localPart + [base[separator]] + remotePart
            let result = TextMerge.merge(
                base: RandomText.join(base), local: RandomText.join(local), remote: RandomText.join(Array(remote)))
            #expect(result == .merged(RandomText.join(expected)), "seed \(seed)")
        }
    }

    @Test func bigRewritesKeepEveryAddedLineAndStaySymmetric() {
        // Thousands of edits: past Myers' limit, so the patience split does the aligning.
        var merges = 0
        for seed in Seeds.list(count: 6) {
            var random = SplitMix64(seed: seed)
            let base = (0..<3_000).map { index in
                random.percent(20) ? random.pick(RandomText.sharedLines) : Array("big \(seed) base \(index)".utf8)
            }
            // Local rewrites the first two thirds, remote touches the rest lightly.
            let local = RandomText.edited(Array(base[..<2_000]), &random, tag: "local", percent: 80) + base[2_000...]
            let remote = base[..<2_100] + RandomText.edited(Array(base[2_100...]), &random, tag: "remote", percent: 3)
            let (baseData, localData, remoteData) = (
                RandomText.join(base), RandomText.join(local), RandomText.join(Array(remote))
            )
            let result = TextMerge.merge(base: baseData, local: localData, remote: remoteData)
            #expect(result == TextMerge.merge(base: baseData, local: remoteData, remote: localData), "seed \(seed)")
            guard case .merged(let merged) = result else { continue }
            merges += 1
            let resultLines = Set(RandomText.lines(merged))
            let baseLines = Set(base)
            let lost = (local + remote).filter { !baseLines.contains($0) && !resultLines.contains($0) }
            #expect(lost.isEmpty, "seed \(seed): \(lost.count) added lines lost")
            let deletedLocally = baseLines.subtracting(local).subtracting(RandomText.sharedLines)
            #expect(resultLines.isDisjoint(with: deletedLocally), "seed \(seed): a deleted line came back")
        }
        #expect(merges >= 4, "only \(merges) of 6 big rewrites merged")
    }
}
