import Foundation
import NotesModel
@testable import NotesStore
import TestSupport
import Testing

/// The size cap: a write past it fails and stores nothing, and a note that a
/// refused write left cut short is held back from sync.
@Suite struct SizeCapTests {
    struct Capped {
        let fixture: StoreFixture
        let clock = TestClock()
        var store: NotesStore { fixture.store }

        init(limit: Int = 1_000) throws {
            var configuration = StoreConfiguration()
            configuration.noteSizeLimitBytes = limit
            configuration.chunkedBodyThresholdBytes = 300
            configuration.bodyChunkBytes = 64
            configuration.clock = clock.storeClock
            fixture = try StoreFixture(configuration: configuration)
        }
    }

    /// Writes `total` bytes in `piece`-byte writes, as `cp` would; returns the error that stopped it.
    func copy(_ store: NotesStore, into id: NoteID, total: Int, piece: Int) -> StoreError? {
        var offset = 0
        while offset < total {
            let count = min(piece, total - offset)
            do {
                try store.write(.note(id), offset: Int64(offset), bytes: Data(repeating: 0x61, count: count))
            } catch {
                return error
            }
            offset += count
        }
        return nil
    }

    func sentNoteIDs(_ store: NotesStore) throws -> [NoteID] {
        try store.freezeBatch().compactMap(\.ref.noteID)
    }

    @Test func aCopyCutShortByTheCapIsHeldBackUntilItIsMadeSmaller() throws {
        let capped = try Capped()
        defer { capped.fixture.remove() }
        let store = capped.store
        let id = try store.createNote(in: .root, title: "big.txt", body: Data())
        let error = copy(store, into: id, total: 1_700, piece: 128)
        #expect(error == .tooLarge(limit: 1_000))
        // The refused write stored nothing: the note holds the pieces before it.
        #expect(try store.contents(of: .note(id)).count == 896)
        #expect(try sentNoteIDs(store).isEmpty)
        let status = try store.status()
        #expect(status.heldForSize == ["/big.txt"])
        #expect(status.humanText(nowNanoseconds: 0).contains("Held back from sync"))

        // Still as cut short (an append that fits does not release it)…
        try store.write(.note(id), offset: 896, bytes: Data(utf8: "x"))
        #expect(try sentNoteIDs(store).isEmpty)
        // …until it is made smaller than it was when the write was refused.
        try store.truncate(.note(id), to: 500)
        #expect(try sentNoteIDs(store) == [id])
        #expect(try store.status().heldForSize.isEmpty)
    }

    @Test func aHeldNoteThatIsDeletedSendsItsDeletion() throws {
        let capped = try Capped()
        defer { capped.fixture.remove() }
        let store = capped.store
        let id = try store.createNote(in: .root, title: "big.txt", body: Data(utf8: "synced text\n"))
        for change in try store.freezeBatch() { try store.settle(change.changeID, outcome: .applied(version: 1)) }
        #expect(copy(store, into: id, total: 1_200, piece: 100) == .tooLarge(limit: 1_000))
        #expect(try sentNoteIDs(store).isEmpty)
        try store.removeFile(in: .root, name: "big.txt")
        let sent = try store.freezeBatch()
        #expect(sent.map(\.ref) == [.note(id)])
        #expect(sent.first?.isDelete == true)
        #expect(try store.status().heldForSize.isEmpty)
    }

    @Test func aRefusedWriteIntoANoteNobodyWasWritingHoldsNothing() throws {
        let capped = try Capped()
        defer { capped.fixture.remove() }
        let store = capped.store
        let id = try store.createNote(in: .root, title: "old.txt", body: Data(utf8: "old text\n"))
        for change in try store.freezeBatch() { try store.settle(change.changeID, outcome: .applied(version: 1)) }
        capped.clock.advance(milliseconds: 60_000)
        #expect(throws: StoreError.tooLarge(limit: 1_000)) { _ = try store.truncate(.note(id), to: 5_000, view: nil) }
        #expect(throws: StoreError.tooLarge(limit: 1_000)) {
            try store.write(.note(id), offset: 990, bytes: Data(count: 20))
        }
        #expect(try store.contents(of: .note(id)) == Data(utf8: "old text\n"))
        #expect(try store.status().heldForSize.isEmpty)
        try store.write(.note(id), offset: 9, bytes: Data(utf8: "more\n"))
        #expect(try sentNoteIDs(store) == [id])
    }
}
