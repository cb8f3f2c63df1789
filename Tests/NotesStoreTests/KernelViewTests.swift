import Foundation
import NotesModel
@testable import NotesStore
import TestSupport
import Testing

/// Writes as the kernel sends them, judged against what the writer could
/// have seen: the store's side of "a write never overwrites bytes its writer
/// has not seen" (the mount hands in the view generation).
@Suite struct KernelViewTests {
    /// A store whose clock the test moves.
    struct Clocked {
        let fixture: StoreFixture
        let clock = TestClock()
        var store: NotesStore { fixture.store }

        init() throws {
            var configuration = StoreConfiguration()
            configuration.clock = clock.storeClock
            fixture = try StoreFixture(configuration: configuration)
        }

        func advance(milliseconds: Int64) { clock.advance(milliseconds: milliseconds) }
    }

    /// A synced note `n` with `body`; returns its id and the view a kernel would hold.
    func syncedNote(_ store: NotesStore, _ body: String) throws -> (NoteID, UInt64) {
        let id = try store.createNote(in: .root, title: "n", body: Data(utf8: body))
        for change in try store.freezeBatch() { try store.settle(change.changeID, outcome: .applied(version: 1)) }
        return (id, store.kernelViewGeneration)
    }

    func pull(_ store: NotesStore, _ id: NoteID, _ body: String, version: Int64 = 2) throws {
        try store.applyPulled(
            [RemoteEntity(.note(id), version: version, deleted: false,
                          note: NoteContent(title: "n", body: Data(utf8: body), folderID: nil))],
            cursor: "c\(version)")
    }

    func text(_ store: NotesStore, _ id: NoteID) throws -> String {
        String(decoding: try store.contents(of: .note(id)), as: UTF8.self)
    }

    @Test func anAppendLandsAtTheNotesEndWhateverOffsetTheKernelComputed() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let (id, view) = try syncedNote(clocked.store, "base\n")
        try pull(clocked.store, id, "base\nA\n")
        let result = try clocked.store.write(.note(id), offset: 5, bytes: Data(utf8: "B\n"), append: true, view: view)
        #expect(try text(clocked.store, id) == "base\nA\nB\n")
        #expect(result == KernelWriteResult(size: 9, kernelViewStale: true))
    }

    @Test func aWriteThroughAViewOlderThanAPullIsMergedWithThePulledText() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let (id, view) = try syncedNote(clocked.store, "a\nb\nc\n")
        try pull(clocked.store, id, "A\nb\nc\n")
        // The writer replaces the last line where it saw it.
        let result = try clocked.store.write(.note(id), offset: 4, bytes: Data(utf8: "C\n"), append: false, view: view)
        #expect(try text(clocked.store, id) == "A\nb\nC\n")
        #expect(result.kernelViewStale)
    }

    @Test func aWriteThroughACurrentViewAppliesAsItIs() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let (id, _) = try syncedNote(clocked.store, "a\nb\nc\n")
        try pull(clocked.store, id, "A\nb\nc\n")
        let view = clocked.store.kernelViewGeneration
        let result = try clocked.store.write(.note(id), offset: 0, bytes: Data(utf8: "x"), append: false, view: view)
        #expect(try text(clocked.store, id) == "x\nb\nc\n")
        #expect(!result.kernelViewStale)
    }

    @Test func aStaleRewriteThatClashesKeepsTheNoteAndMakesOneConflictCopy() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "one\ntwo\n")
        try pull(store, id, "one\nTWO-remote\n")
        #expect(try store.truncate(.note(id), to: 0, view: view))
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "one\nTWO-local\n"), append: false, view: view)
        #expect(try text(store, id) == "one\nTWO-remote\n")
        let names = try store.list(directory: .root, afterCookie: 0, limit: 10).map(\.name)
        #expect(names.count == 2)
        let copy = try #require(try store.list(directory: .root, afterCookie: 0, limit: 10).first { $0.ref != .note(id) })
        #expect(try store.contents(of: copy.ref) == Data(utf8: "one\nTWO-local\n"))
    }

    @Test func aTruncationBeforeTheRewriteOfAStaleSaveLeavesNoHalfSavedCopy() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "one\ntwo\nthree\n")
        try pull(store, id, "ONE\ntwo\nthree\n")
        // Truncating to nothing clashes with the changed first line; the
        // rewrite that follows (changing only the last line) merges cleanly.
        #expect(try store.truncate(.note(id), to: 0, view: view))
        clocked.advance(milliseconds: 10)
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "one\ntwo\nTHREE\n"), append: false, view: view)
        #expect(try text(store, id) == "ONE\ntwo\nTHREE\n")
        #expect(try store.list(directory: .root, afterCookie: 0, limit: 10).map(\.name) == ["n"])
    }

    @Test func aWriterQuietForMoreThanASecondStartsAfresh() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "a\nb\nc\n")
        try pull(store, id, "A\nb\nc\n")
        _ = try store.write(.note(id), offset: 4, bytes: Data(utf8: "C\n"), append: false, view: view)
        clocked.advance(milliseconds: 2_000)
        // The kernel learned the merged text since (a getattr after the
        // invalidation): a later write at its offsets applies as it is.
        let later = store.kernelViewGeneration
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "Z"), append: false, view: later)
        #expect(try text(store, id) == "Z\nb\nC\n")
    }

    @Test func aSaveThatClashesAgainAfterMergingKeepsTheWritersTextInItsCopy() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "one\ntwo\nthree\n")
        try pull(store, id, "ONE\ntwo\nthree\n")
        #expect(try store.truncate(.note(id), to: 0, view: view))
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "one\ntwo\nTHREE\n"), append: false, view: view)
        #expect(try text(store, id) == "ONE\ntwo\nTHREE\n")
        // The same writer now changes the line the pull changed too.
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "zzz"), append: false, view: view)
        #expect(try text(store, id) == "ONE\ntwo\nthree\n")
        let entries = try store.list(directory: .root, afterCookie: 0, limit: 10)
        let copy = try #require(entries.first { $0.ref != .note(id) })
        #expect(try store.contents(of: copy.ref) == Data(utf8: "zzz\ntwo\nTHREE\n"))
        #expect(entries.count == 2)
    }

    @Test func aChangeMadeBetweenTwoWritesOfAStaleSaveIsMergedNotOverwritten() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "a\nb\nc\nd\ne\n")
        try pull(store, id, "A\nb\nc\nd\ne\n")
        _ = try store.write(.note(id), offset: 8, bytes: Data(utf8: "E"), append: false, view: view)
        #expect(try text(store, id) == "A\nb\nc\nd\nE\n")
        // Another program changes the first line before this writer's next write.
        try store.replaceBody(of: id, with: Data(utf8: "Z\nb\nc\nd\nE\n"))
        _ = try store.write(.note(id), offset: 6, bytes: Data(utf8: "D"), append: false, view: view)
        #expect(try text(store, id) == "Z\nb\nc\nD\nE\n")
    }

    @Test func anotherProgramsSaveWithinTheSecondNeverTakesAStaleSavesConflictCopy() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "1\n2\n3\n")
        try pull(store, id, "ONE\n2\n3\n")
        // A program that had not seen the pull rewrites the note: it clashes.
        #expect(try store.truncate(.note(id), to: 0, view: view))
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "uno\n2\n3\n"), append: false, view: view)
        #expect(try text(store, id) == "ONE\n2\n3\n")
        // Within the second another program, which read the note as it is
        // now, saves it too (without open requests the mount cannot tell the
        // two programs apart, so this save joins the first).
        clocked.advance(milliseconds: 100)
        let current = store.kernelViewGeneration
        _ = try store.truncate(.note(id), to: 0, view: current)
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "ONE\n2\n3\n8\n"), append: false, view: current)
        #expect(try text(store, id) == "ONE\n2\n3\n8\n")
        // The first program's lines stay in the conflict copy.
        let copies = try store.list(directory: .root, afterCookie: 0, limit: 10).filter { $0.ref != .note(id) }
        #expect(try copies.map { try store.contents(of: $0.ref) } == [Data(utf8: "uno\n2\n3\n")])
    }

    @Test func aStaleSaveThatClashesAgainLaterUpdatesTheOneConflictCopy() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "1\n2\n3\n")
        try pull(store, id, "ONE\n2\n3\n")
        #expect(try store.truncate(.note(id), to: 0, view: view))
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "uno\n2\n3\n"), append: false, view: view)
        // Much later, another pull and another stale save of the same line.
        clocked.advance(milliseconds: 5_000)
        let later = store.kernelViewGeneration
        try pull(store, id, "EINS\n2\n3\n", version: 3)
        #expect(try store.truncate(.note(id), to: 0, view: later))
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "un\n2\n3\n"), append: false, view: later)
        #expect(try text(store, id) == "EINS\n2\n3\n")
        let copies = try store.list(directory: .root, afterCookie: 0, limit: 10).filter { $0.ref != .note(id) }
        #expect(copies.count == 1)
        #expect(try copies.map { try store.contents(of: $0.ref) } == [Data(utf8: "uno\nun\n2\n3\n")])
    }

    @Test func aWriteThroughAViewFromBeforeAPulledDeletionAndRevivalIsMerged() throws {
        let clocked = try Clocked()
        defer { clocked.fixture.remove() }
        let store = clocked.store
        let (id, view) = try syncedNote(store, "a\n")
        // Another machine deletes the note, a third edits it back to life
        // (an edit beats a delete); a program here read it before both.
        try store.applyPulled(
            [RemoteEntity(.note(id), version: 2, deleted: true, note: nil)], cursor: "c2")
        try pull(store, id, "a\nB\n", version: 3)
        #expect(try store.truncate(.note(id), to: 0, view: view))
        _ = try store.write(.note(id), offset: 0, bytes: Data(utf8: "a\nC\n"), append: false, view: view)
        #expect(try text(store, id) == "a\nB\nC\n")
    }
}
