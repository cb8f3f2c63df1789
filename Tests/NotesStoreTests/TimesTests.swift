import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import Synchronization
import TestSupport
import Testing

/// atime, mtime and ctime in the store: kept apart, the ctime never going
/// back, directories' times moving with their entries, and none of it synced.
@Suite struct TimesTests {
    let clock = TestClock()
    let fixture: StoreFixture
    var store: NotesStore { fixture.store }

    init() throws {
        var configuration = StoreConfiguration()
        configuration.clock = clock.storeClock
        fixture = try StoreFixture(configuration: configuration)
    }

    var now: Int64 { clock.nanoseconds.withLock { $0 } }

    func entry(_ ref: EntryRef) throws -> Entry { try #require(try store.entry(for: ref)) }

    func outbox() throws -> [String] {
        try Connection(path: fixture.databasePath).query(
            "SELECT entity_kind || ':' || op FROM outbox ORDER BY seq") { $0.string(0) }
    }

    /// Marks every queued change as applied, as if a sync had run.
    func syncEverything() throws {
        var version: Int64 = 100
        while true {
            let batch = try store.freezeBatch()
            if batch.isEmpty { return }
            for change in batch {
                version += 1
                try store.settle(change.changeID, outcome: .applied(version: version))
            }
        }
    }

    @Test func aFoldersMtimeAndCtimeMoveWithItsEntriesAndNothingIsQueuedForIt() throws {
        defer { fixture.remove() }
        let work = try store.makeDirectory(in: .root, name: "Work").ref
        let other = try store.makeDirectory(in: .root, name: "Other").ref
        let stash = try store.makeDirectory(in: .root, name: ".stash").ref
        try syncEverything()
        let lastCommit = Mutex<StoreCommit?>(nil)
        store.addObserver { commit in lastCommit.withLock { $0 = commit } }

        func expectMoved(
            _ refs: [EntryRef], by action: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            clock.advance(seconds: 10)
            let before = try [work, other, stash, .root].map(entry)
            try action()
            for (ref, old) in zip([work, other, stash, EntryRef.root], before) {
                let new = try entry(ref)
                if refs.contains(ref) {
                    #expect(new.modifiedNanoseconds == now && new.changedNanoseconds == now, "\(ref)",
                            sourceLocation: sourceLocation)
                } else {
                    #expect(
                        new.modifiedNanoseconds == old.modifiedNanoseconds, "\(ref)", sourceLocation: sourceLocation)
                    #expect(new.changedNanoseconds == old.changedNanoseconds, "\(ref)", sourceLocation: sourceLocation)
                }
            }
        }
        try expectMoved([work]) { _ = try store.createFile(in: try #require(work.directory), name: "a.md") }
        try expectMoved([work]) { try store.removeFile(in: try #require(work.directory), name: "a.md") }
        try expectMoved([work, other]) {
            _ = try store.createFile(in: try #require(work.directory), name: "b.md")
            clock.advance(seconds: 1)
            _ = try store.rename(
                from: try #require(work.directory), name: "b.md", to: try #require(other.directory), newName: "b.md")
        }
        try expectMoved([.root]) { try store.createNote(in: .root, title: "r.md", body: Data()) }
        try expectMoved([stash]) { _ = try store.createFile(in: try #require(stash.directory), name: "x") }
        // Only the notes' own changes were queued: no folder change.
        let queued = try outbox()
        #expect(!queued.isEmpty && queued.allSatisfy { $0.hasPrefix("note:") }, "\(queued)")
        // The commit says which directories moved, so a cache of folder attributes can follow.
        let reported = lastCommit.withLock { $0?.directoriesModified }
        #expect(reported == [try #require(stash.directory): now])
    }

    @Test func aPulledNoteMovesItsFoldersTimesWithoutQueuingAnything() throws {
        defer { fixture.remove() }
        let work = try store.makeDirectory(in: .root, name: "Work").ref
        guard case .folder(let folderID) = work else { throw StoreError.notFound("Work") }
        try syncEverything()
        clock.advance(seconds: 10)
        try store.applyPulled(
            [RemoteEntity(.note(NoteID()), version: 7, deleted: false,
                          note: NoteContent(title: "n.md", body: Data(utf8: "x"), folderID: folderID))],
            cursor: "c")
        #expect(try entry(work).modifiedNanoseconds == now)
        #expect(try outbox().isEmpty)
    }

    @Test func settingTheAtimeOrTheMtimeLeavesTheOtherAloneAndMovesTheCtime() throws {
        defer { fixture.remove() }
        let note = try store.createFile(in: .root, name: "n.md").ref
        try store.write(note, offset: 0, bytes: Data(utf8: "text"))
        try syncEverything()
        let written = try entry(note).modifiedNanoseconds
        clock.advance(seconds: 10)
        try store.setTimes(note, accessed: 5_000, modified: nil)  // touch -a
        var shown = try entry(note)
        #expect(shown.accessedNanoseconds == 5_000)
        #expect(shown.modifiedNanoseconds == written)
        #expect(shown.changedNanoseconds == now)
        clock.advance(seconds: 10)
        try store.setTimes(note, accessed: nil, modified: 7_000)  // touch -m
        shown = try entry(note)
        #expect(shown.accessedNanoseconds == 5_000)
        #expect(shown.modifiedNanoseconds == 7_000)
        #expect(shown.changedNanoseconds == now)
        // An mtime alone, on a file whose atime was never set: the atime stays where it was.
        let other = try store.createFile(in: .root, name: "o.md").ref
        let created = try entry(other).modifiedNanoseconds
        try store.setTimes(other, accessed: nil, modified: 9_000)
        #expect(try entry(other).accessedNanoseconds == created)
        // The root keeps times too.
        try store.setTimes(.root, accessed: 3_000, modified: 4_000)
        #expect(try entry(.root).accessedNanoseconds == 3_000)
        #expect(try entry(.root).modifiedNanoseconds == 4_000)
        // Listings show the same times as a lookup.
        #expect(try store.list(directory: .root).first { $0.ref == note } == (try entry(note)))
        // Times are this machine's: nothing was queued for the synced note
        // (the one change is the creation of o.md).
        #expect(try outbox() == ["note:put"])
    }

    @Test func theCtimeNeverGoesBackWhateverTheMtimeIsSetTo() throws {
        defer { fixture.remove() }
        let note = try store.createFile(in: .root, name: "n.md").ref
        var last = try entry(note).changedNanoseconds
        func forward(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let changed = try entry(note).changedNanoseconds
            #expect(changed >= last, "\(what)", sourceLocation: sourceLocation)
            last = changed
        }
        clock.advance(seconds: 10)
        try store.setModified(note, nanoseconds: 1_000)
        #expect(try entry(note).changedNanoseconds == now)
        try forward("mtime set into the past")
        clock.advance(seconds: 10)
        let future = now + 1_000_000_000_000
        try store.setModified(note, nanoseconds: future)
        // When it happened, not the future mtime.
        #expect(try entry(note).changedNanoseconds == now)
        try forward("mtime set into the future")
        clock.advance(seconds: 10)
        try store.setModified(note, nanoseconds: 2_000)
        try forward("mtime set back into the past")
        clock.advance(seconds: 10)
        try store.write(note, offset: 0, bytes: Data(utf8: "x"))
        #expect(try entry(note).changedNanoseconds == now)
        try forward("write")
        clock.advance(seconds: 10)
        try store.setMode(note, mode: 0o600)
        #expect(try entry(note).changedNanoseconds == now)
        try forward("chmod")
        clock.advance(seconds: 10)
        try store.touchStatus(note)
        #expect(try entry(note).changedNanoseconds == now)
        try forward("chown to the same owner")
        // A rename-over carrying an older mtime (rsync's temporary file).
        let temp = try store.createFile(in: .root, name: ".n.md.tmp").ref
        try store.write(temp, offset: 0, bytes: Data(utf8: "new"))
        try store.setModified(temp, nanoseconds: 1_000)
        clock.advance(seconds: 10)
        _ = try store.rename(from: .root, name: ".n.md.tmp", to: .root, newName: "n.md")
        #expect(try entry(note).modifiedNanoseconds == 1_000)
        #expect(try entry(note).changedNanoseconds == now)
        try forward("rename-over")
        clock.advance(seconds: 10)
        _ = try store.rename(from: .root, name: "n.md", to: .root, newName: "m.md")
        #expect(try entry(note).changedNanoseconds == now)
        try forward("rename")
        // A pulled change after the mtime was set far ahead.
        try syncEverything()
        try store.setModified(note, nanoseconds: future)
        guard case .note(let id) = note else { return }
        try store.applyPulled(
            [RemoteEntity(.note(id), version: 900, deleted: false,
                          note: NoteContent(title: "m.md", body: Data(utf8: "remote"), folderID: nil))],
            cursor: "c")
        #expect(try store.contents(of: note) == Data(utf8: "remote"))
        try forward("pull")
    }

    @Test func aReusedLocalEntryNumberStartsWithoutTheOldTimes() throws {
        defer { fixture.remove() }
        let first = try store.createFile(in: .root, name: ".scratch").ref
        try store.setTimes(first, accessed: 5_000, modified: nil)
        try store.removeFile(in: .root, name: ".scratch")
        let second = try store.createFile(in: .root, name: ".scratch").ref
        #expect(try entry(second).accessedNanoseconds == entry(second).modifiedNanoseconds)
    }
}
