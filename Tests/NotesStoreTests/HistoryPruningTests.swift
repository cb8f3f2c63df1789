import Foundation
import NotesModel
import SQLiteKit
import TestSupport
import Testing

@testable import NotesStore

/// The local history is bounded in age and size by a running total, pruned
/// off the save path in bounded steps, and gives freed space back.
@Suite struct HistoryPruningTests {
    func truncate(_ store: NotesStore, _ note: NoteID, keeping text: String) throws {
        try store.write(.note(note), offset: 0, bytes: Data(text.utf8))
        try store.truncate(.note(note), to: 0)
    }

    func manualConfiguration(_ clock: TestClock) -> StoreConfiguration {
        var configuration = StoreConfiguration()
        configuration.clock = clock.storeClock
        configuration.historyPruning = .manual
        return configuration
    }

    @Test func entriesPastTheRetentionAgeGoAtTheNextPruning() throws {
        let clock = TestClock()
        var configuration = manualConfiguration(clock)
        configuration.historyRetentionNanoseconds = 3_600 * 1_000_000_000
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data())
        try truncate(store, note, keeping: "first")
        clock.advance(seconds: 1_800)
        try truncate(store, note, keeping: "second")
        try store.pruneHistory()
        #expect(try store.history().map(\.size).sorted() == [5, 6])
        clock.advance(seconds: 2_000)  // "first" is now 3,800 s old, "second" 2,000 s
        try truncate(store, note, keeping: "third!!")
        try store.pruneHistory()
        #expect(try store.history().map(\.size).sorted() == [6, 7])
    }

    @Test func aSaveNeverPrunesAndTheCapIsHeldExactlyByTheRunningTotal() throws {
        let clock = TestClock()
        var configuration = manualConfiguration(clock)
        configuration.historyMaxBytes = 25
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data())
        for index in 0..<6 { try truncate(store, note, keeping: "entry-\(index)-") }  // 8 bytes each
        // The saves only kept their copies; pruning is not theirs to do.
        #expect(try store.history().count == 6)
        #expect(try store.historyTotal() == HistoryTotal(bytes: 48, entries: 6))
        try store.pruneHistory()
        let kept = try store.history()
        #expect(kept.count == 3, "the newest entries that fit stay: \(kept.map(\.size))")
        #expect(kept.map(\.seq).min() ?? 0 > 3, "the oldest went first")
        #expect(try store.historyTotal() == HistoryTotal(bytes: 24, entries: 3))
    }

    @Test func theRunningTotalFollowsEveryWriterOfTheHistory() throws {
        let fixture = try StoreFixture(configuration: manualConfiguration(TestClock()))
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data())
        try truncate(store, note, keeping: "0123456789")
        // SQL that does not know the size column, as an old tool would write it.
        let other = try Connection(path: fixture.databasePath)
        try other.run(
            "INSERT INTO history(note_id, title, body, saved_ns, reason) VALUES (?, 't', ?, 0, 'truncated')",
            note.description, Data(count: 1_000))
        #expect(try store.historyTotal() == HistoryTotal(bytes: 1_010, entries: 2))
        try other.run("UPDATE history SET body = ? WHERE size = 1000", Data(count: 10))
        #expect(try store.historyTotal() == HistoryTotal(bytes: 20, entries: 2))
        try other.run("DELETE FROM history WHERE size = 10 AND title = 't'")
        #expect(try store.historyTotal() == HistoryTotal(bytes: 10, entries: 1))
        #expect(try store.history().map(\.size) == [10])
    }

    @Test func pruningRunsInBoundedStepsEachItsOwnTransaction() throws {
        var configuration = manualConfiguration(TestClock())
        configuration.historyMaxBytes = 256 << 10
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data())
        let body = String(repeating: "a line of text that was kept\n", count: 100)  // 2,900 bytes
        for index in 0..<400 { try truncate(store, note, keeping: "\(index) \(body)") }
        #expect(try store.history().count == 400)

        var steps: [HistoryPruneStep] = []
        while steps.count < 1_000 {
            let step = try store.pruneHistoryStep()
            if step == .idle { break }
            steps.append(step)
        }
        let deletions = steps.compactMap { step -> (Int, Int64)? in
            if case .deleted(let entries, let bytes) = step { return (entries, bytes) }
            return nil
        }
        #expect(deletions.count >= 4, "\(steps)")
        #expect(deletions.allSatisfy { $0.0 <= NotesStore.pruneStepEntriesMax }, "\(deletions)")
        #expect(deletions.allSatisfy { $0.1 <= NotesStore.pruneStepBytesMax }, "\(deletions)")
        let vacuums = steps.compactMap { step -> Int? in
            if case .vacuumed(let pages) = step { return pages }
            return nil
        }
        #expect(vacuums.allSatisfy { $0 <= NotesStore.vacuumStepPages }, "\(vacuums)")
        let total = try store.historyTotal()
        #expect(total.bytes <= configuration.historyMaxBytes)
        #expect(total.bytes + 2_950 > configuration.historyMaxBytes, "no more than the cap asks for: \(total)")
    }

    @Test func theDatabaseFileShrinksAfterPruning() throws {
        var configuration = manualConfiguration(TestClock())
        configuration.historyMaxBytes = 1 << 20
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "big.md", body: Data())
        var random = SplitMix64(seed: 3)
        for _ in 0..<40 {
            // Text that does not compress or repeat: 256 KiB each, 10 MiB in all.
            let text = (0..<(256 << 10) / 16).map { _ in String(format: "%016llx", random.next()) }.joined()
            try truncate(store, note, keeping: text)
        }
        let checkpoint = try Connection(path: fixture.databasePath)
        _ = try checkpoint.checkpointAndTruncateLog()
        let before = try fileSize(fixture.databasePath)
        #expect(before > 10 << 20)

        try store.pruneHistory()
        _ = try checkpoint.checkpointAndTruncateLog()
        let after = try fileSize(fixture.databasePath)
        #expect(after < before / 2, "from \(before) to \(after) bytes")
        #expect(try store.integrityCheck() == ["ok"])
        #expect(try store.historyTotal().bytes <= 1 << 20)
    }

    @Test func pruningWritesLittleToTheLogAndLeavesItSmall() throws {
        // Debian's SQLite zero-fills every freed page (secure_delete=ON):
        // pruning 15 MiB then wrote 18 MiB to the log, against 2.9 MiB (the
        // kept entries moved down by the vacuum) with FAST.
        var configuration = manualConfiguration(TestClock())
        configuration.historyMaxBytes = 1 << 20
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "big.md", body: Data())
        let text = String(repeating: "0123456789abcdef", count: (256 << 10) / 16)
        for index in 0..<64 { try truncate(store, note, keeping: "\(index)\(text)") }
        _ = try Connection(path: fixture.databasePath).checkpointAndTruncateLog()
        #expect(try fileSize(fixture.databasePath + "-wal") == 0)

        try store.pruneHistory()
        let log = try fileSize(fixture.databasePath + "-wal")
        #expect(log < 6 << 20, "pruning 15 MiB wrote \(log) bytes to the log")
        #expect(log <= Int64(NotesStore.walCheckpointPages * 4_096 + NotesStore.walSizeLimitBytes))
    }

    @Test func aBackgroundStoreKeepsTheCapWithoutTheSaveWaiting() throws {
        var configuration = StoreConfiguration()
        configuration.historyMaxBytes = 64 << 10
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data())
        let text = String(repeating: "x", count: 16 << 10)
        for index in 0..<20 { try truncate(store, note, keeping: "\(index)\(text)") }
        store.waitForHistoryPruning()
        // One more pass: a run may have started before the last truncation.
        try store.pruneHistory()
        #expect(try store.historyTotal().bytes <= 64 << 10)
        #expect(try store.history().count == 3)
    }

    func fileSize(_ path: String) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }
}
