import Foundation
import NotesModel
import NotesStore
import TestSupport
import Testing

/// The local history is bounded in age and size without reading the whole
/// history on every truncation.
@Suite struct HistoryPruningTests {
    func truncate(_ store: NotesStore, _ note: NoteID, keeping text: String) throws {
        try store.write(.note(note), offset: 0, bytes: Data(text.utf8))
        try store.truncate(.note(note), to: 0)
    }

    @Test func entriesPastTheRetentionAgeGoAtTheNextTruncation() throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.clock = clock.storeClock
        configuration.historyRetentionNanoseconds = 3_600 * 1_000_000_000
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data())
        try truncate(store, note, keeping: "first")
        clock.advance(seconds: 1_800)
        try truncate(store, note, keeping: "second")
        #expect(try store.history().map(\.size).sorted() == [5, 6])
        clock.advance(seconds: 2_000)  // "first" is now 3,800 s old, "second" 2,000 s
        try truncate(store, note, keeping: "third!!")
        #expect(try store.history().map(\.size).sorted() == [6, 7])
    }

    @Test func theSizeCapHoldsAtTheFirstTruncationAndThenEveryMinute() throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.clock = clock.storeClock
        configuration.historyMaxBytes = 25
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data())
        for index in 0..<5 { try truncate(store, note, keeping: "entry-\(index)-") }  // 8 bytes each
        // The first truncation checked the cap; within the minute nothing more is dropped.
        #expect(try store.history().count == 5)
        clock.advance(seconds: 61)
        try truncate(store, note, keeping: "entry-5-")
        let kept = try store.history()
        #expect(kept.reduce(0) { $0 + $1.size } <= 25)
        #expect(kept.count == 3, "the newest entries stay: \(kept.map(\.size))")
        #expect(kept.map(\.seq).min() ?? 0 > 3, "the oldest went first")
    }
}
