import Foundation
import NotesModel
import SQLiteKit
import TestSupport
import Testing

@testable import NotesStore

/// The trash: notes deleted here or pulled deleted stay with their last
/// text and old path for the retention period, and come back as the same
/// note with a put on their tombstone's version.
@Suite struct TrashTests {
    /// Marks every queued change as applied, as if a sync had run; returns
    /// the changes sent.
    @discardableResult
    func syncEverything(_ store: NotesStore, from version: inout Int64) throws -> [OutgoingChange] {
        var sent: [OutgoingChange] = []
        while true {
            let batch = try store.freezeBatch()
            if batch.isEmpty { return sent }
            for change in batch {
                version += 1
                try store.settle(change.changeID, outcome: .applied(version: version))
            }
            sent += batch
        }
    }

    /// `Work/plan.md` ("the plan\n"), synced.
    func syncedPlan(_ store: NotesStore, version: inout Int64) throws -> (work: DirectoryRef, plan: NoteID) {
        let work = try store.makeFolders(path: ["Work"])
        let plan = try store.createNote(in: work, title: "plan.md", body: Data(utf8: "the plan\n"))
        try syncEverything(store, from: &version)
        return (work, plan)
    }

    func serverVersion(_ fixture: StoreFixture, _ id: NoteID) throws -> Int64? {
        try Connection(path: fixture.databasePath).queryOne(
            "SELECT server_version FROM notes WHERE id = ?", id.description
        ) { $0.optionalInt64(0) } ?? nil
    }

    @Test func aNoteDeletedHereIsInTheTrashWithItsTextUnderItsOldPath() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let (work, plan) = try syncedPlan(store, version: &version)
        try store.removeFile(in: work, name: "plan.md")

        let entries = try store.trashEntries()
        #expect(entries.map(\.path) == ["Work/plan.md"])
        let entry = try #require(entries.first)
        #expect(entry.noteID == plan && entry.origin == .deletedHere && entry.size == 9)
        #expect(try store.trashBody(entry.seq) == Data(utf8: "the plan\n"))
        #expect(try store.trashNode(named: "Work", in: "") == .directory(path: "Work"))
        #expect(try store.trashNode(named: "plan.md", in: "Work") == .note(entry))
        #expect(try store.trashNode(named: "plan.md", in: "") == nil)
        let listing = TrashTree.listing(of: "", entries: entries)
        #expect(listing.directories == ["Work"] && listing.notes.isEmpty)
        #expect(TrashTree.listing(of: "Work", entries: entries).notes.map(\.name) == ["plan.md"])
    }

    @Test func aNoteThatNeverReachedAServerStaysInTheTrashAcrossMountSessions() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        try store.beginSession()
        let draft = try store.createNote(in: .root, title: "draft.md", body: Data(utf8: "offline words\n"))
        try store.removeFile(in: .root, name: "draft.md")
        // Its deletion is never sent: nothing to tell a server.
        #expect(try store.freezeBatch().isEmpty)
        try store.beginSession()
        let entry = try #require(try store.trashEntries().first)
        #expect(entry.noteID == draft && entry.path == "draft.md")
        #expect(try store.trashBody(entry.seq) == Data(utf8: "offline words\n"))

        // Brought back, it is sent as new (no base): the server never had it.
        #expect(try store.restoreFromTrash(entry.seq) == draft)
        #expect(try store.lookup(in: .root, name: "draft.md")?.ref == .note(draft))
        let sent = try store.freezeBatch()
        #expect(sent.count == 1 && sent.first?.ref == .note(draft) && sent.first?.operation == .put)
        #expect(sent.first?.baseVersion == nil && sent.first?.note?.body == Data(utf8: "offline words\n"))
    }

    @Test func aDeletionPulledFromAnotherMachineIsInTheTrashWithTheTextThisMachineHad() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let (work, plan) = try syncedPlan(store, version: &version)
        let tombstone = version + 1
        try store.applyPulled(
            [RemoteEntity(.note(plan), version: tombstone, deleted: true)], cursor: "c1")
        #expect(try store.lookup(in: work, name: "plan.md") == nil)

        let entry = try #require(try store.trashEntries().first)
        #expect(entry.noteID == plan && entry.origin == .deletedElsewhere && entry.path == "Work/plan.md")
        #expect(try store.trashBody(entry.seq) == Data(utf8: "the plan\n"))

        // Restored: the same note, and a put on the tombstone's version,
        // which the server applies as an edit that revives it everywhere.
        #expect(try store.restoreFromTrash(entry.seq) == plan)
        #expect(try store.lookup(in: work, name: "plan.md")?.ref == .note(plan))
        #expect(try store.contents(of: .note(plan)) == Data(utf8: "the plan\n"))
        #expect(try store.trashEntries().isEmpty)
        let sent = try store.freezeBatch()
        #expect(sent.map(\.ref) == [.note(plan)])
        #expect(sent.first?.isDelete == false && sent.first?.baseVersion == tombstone)
        #expect(sent.first?.note?.title == "plan.md" && sent.first?.note?.body == Data(utf8: "the plan\n"))
    }

    @Test func restoreRevivesTheSameNoteOnItsTombstonesVersionAndMakesItsGoneFolderAgain() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let (work, plan) = try syncedPlan(store, version: &version)
        // rm -rf Work: the note, then the folder.
        try store.removeFile(in: work, name: "plan.md")
        try store.removeDirectory(in: .root, name: "Work")
        let sentDeletes = try syncEverything(store, from: &version)
        #expect(sentDeletes.allSatisfy(\.isDelete) && sentDeletes.count == 2)
        let tombstone = try #require(try serverVersion(fixture, plan))
        #expect(try store.list(directory: .root).isEmpty)

        let entry = try #require(try store.trashEntries().first)
        #expect(try store.restoreFromTrash(entry.seq) == plan)
        let folder = try #require(try store.lookup(in: .root, name: "Work"))
        let directory = try #require(folder.ref.directory)
        #expect(try store.lookup(in: directory, name: "plan.md")?.ref == .note(plan))
        let sent = try store.freezeBatch()
        let notePut = try #require(sent.first { $0.kind == .note })
        #expect(notePut.ref == .note(plan) && notePut.operation == .put && notePut.baseVersion == tombstone)
        #expect(sent.contains { $0.kind == .folder && !$0.isDelete }, "the folder is made again too")
    }

    @Test func movedOutUnderAnotherNameItTakesThatNameAndKeepsItsId() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeFolders(path: ["Work"])
        let archive = try store.makeFolders(path: ["Archive"])
        let plan = try store.createNote(in: work, title: "plan.md", body: Data(utf8: "the plan\n"))
        try store.removeFile(in: work, name: "plan.md")
        let entry = try #require(try store.trashEntries().first)
        try store.createNote(in: archive, title: "taken.md", body: Data())
        #expect(throws: StoreError.alreadyExists("taken.md")) {
            try store.restoreFromTrash(entry.seq, to: .at(archive, name: "taken.md"))
        }
        #expect(throws: StoreError.self) { try store.restoreFromTrash(entry.seq, to: .at(archive, name: "plan.md~")) }
        #expect(try store.restoreFromTrash(entry.seq, to: .at(archive, name: "old plan.md")) == plan)
        #expect(try store.lookup(in: archive, name: "old plan.md")?.ref == .note(plan))
        #expect(try store.contents(of: .note(plan)) == Data(utf8: "the plan\n"))
    }

    @Test func aFolderOfTheTrashComesBackWhole() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeFolders(path: ["Work", "Q1"])
        let a = try store.createNote(in: work, title: "a.md", body: Data(utf8: "a\n"))
        let b = try store.createNote(in: work, title: "b.md", body: Data(utf8: "b\n"))
        for name in ["a.md", "b.md"] { try store.removeFile(in: work, name: name) }
        try store.removeDirectory(in: try #require(try store.lookup(in: .root, name: "Work")?.ref.directory), name: "Q1")
        try store.removeDirectory(in: .root, name: "Work")
        #expect(Set(try store.restoreTrashDirectory("Work", to: .at(.root, name: "Restored"))) == [a, b])
        let restored = try #require(try store.lookup(in: .root, name: "Restored")?.ref.directory)
        let q1 = try #require(try store.lookup(in: restored, name: "Q1")?.ref.directory)
        #expect(try store.list(directory: q1).map(\.name).sorted() == ["a.md", "b.md"])
        #expect(try store.trashEntries().isEmpty)
    }

    @Test func aNoteRevivedByASaveDoesNotLingerInTheTrash() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let id = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "v1\n"))
        try syncEverything(store, from: &version)
        // vim: rename to the backup name, write the file anew, delete the backup.
        _ = try store.rename(from: .root, name: "n.md", to: .root, newName: "n.md~")
        #expect(try store.trashEntries().map(\.noteID) == [id], "gone from the synced tree for now")
        let revived = try store.createFile(in: .root, name: "n.md")
        try store.write(revived.ref, offset: 0, bytes: Data(utf8: "v2\n"))
        try store.removeFile(in: .root, name: "n.md~")
        #expect(revived.ref == .note(id))
        #expect(try store.trashEntries().isEmpty)
        // git: unlink and create.
        try store.removeFile(in: .root, name: "n.md")
        _ = try store.createFile(in: .root, name: "n.md")
        #expect(try store.trashEntries().isEmpty)
        // A temporary note saved over it (sed -i, a write-then-rename save):
        // its text lives on in the note, so it is not in the trash either.
        let temp = try store.createFile(in: .root, name: "sedAb12Cd")
        try store.write(temp.ref, offset: 0, bytes: Data(utf8: "v3\n"))
        try syncEverything(store, from: &version)
        _ = try store.rename(from: .root, name: "sedAb12Cd", to: .root, newName: "n.md")
        #expect(try store.trashEntries().isEmpty)
        #expect(try store.contents(of: .note(id)) == Data(utf8: "v3\n"))
    }

    @Test func aPulledEditOfADeletedNoteTakesItOutOfTheTrash() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let id = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "v1\n"))
        try syncEverything(store, from: &version)
        try store.applyPulled([RemoteEntity(.note(id), version: 200, deleted: true)], cursor: "c1")
        #expect(try store.trashEntries().count == 1)
        // Another machine restored it (or edited it): it is live again.
        try store.applyPulled(
            [RemoteEntity(.note(id), version: 201, deleted: false,
                          note: NoteContent(title: "n.md", body: Data(utf8: "v1\n"), folderID: nil))], cursor: "c2")
        #expect(try store.trashEntries().isEmpty)
    }

    @Test func theNewestOfTwoDeletedNotesAtOnePathKeepsItsNameAndTheOtherIsShownWithItsTime() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.clock = clock.storeClock
        let store = try NotesStore(path: fixture.directory.file("two.sqlite"), configuration: configuration)
        let first = try store.createNote(in: .root, title: "todo.md", body: Data(utf8: "first\n"))
        try store.removeFile(in: .root, name: "todo.md")
        clock.advance(seconds: 60)
        let second = try store.createNote(in: .root, title: "todo.md", body: Data(utf8: "second\n"))
        try store.removeFile(in: .root, name: "todo.md")
        let entries = try store.trashEntries()
        #expect(entries.map(\.noteID) == [second, first])
        let listing = TrashTree.listing(of: "", entries: entries)
        let older = try #require(entries.last)
        #expect(listing.notes.map(\.name).sorted() == [older.distinctName, "todo.md"].sorted())
        #expect(older.distinctName.hasPrefix("todo (deleted ") && older.distinctName.hasSuffix(" #\(older.seq)).md"))
        #expect(try store.trashNode(named: "todo.md", in: "")?.noteID == second)
        #expect(try store.trashNode(named: older.distinctName, in: "")?.noteID == first)
        #expect(Set(TrashTree.shownPaths(entries).values) == ["todo.md", older.distinctName])
        // Moved out under its distinct name, it keeps its own title.
        try store.restoreFromTrash(older.seq, to: .at(.root, name: older.distinctName))
        #expect(try store.lookup(in: .root, name: "todo.md")?.ref == .note(first))
    }

    @Test func entriesPastTheRetentionAreHiddenAndPrunedWithTheirText() throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.clock = clock.storeClock
        configuration.historyPruning = .manual
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let synced = try store.createNote(in: .root, title: "synced.md", body: Data(utf8: "old and synced\n"))
        try syncEverything(store, from: &version)
        try store.beginSession()
        let local = try store.createNote(in: .root, title: "local.md", body: Data(utf8: "old and local\n"))
        try store.removeFile(in: .root, name: "synced.md")
        try store.removeFile(in: .root, name: "local.md")
        try syncEverything(store, from: &version)
        clock.advance(seconds: 29 * 86_400)
        let recent = try store.createNote(in: .root, title: "recent.md", body: Data(utf8: "recent\n"))
        try store.removeFile(in: .root, name: "recent.md")
        try store.pruneHistory()
        #expect(try store.trashEntries().count == 3)

        clock.advance(seconds: 2 * 86_400)
        #expect(try store.trashEntries().map(\.noteID) == [recent], "past the period: no longer shown")
        try store.beginSession()
        try store.pruneHistory()
        #expect(try store.trashEntries().map(\.noteID) == [recent])
        let db = try Connection(path: fixture.databasePath)
        #expect(try db.queryOne("SELECT count(*) FROM trash") { $0.int(0) } == 1)
        // The synced tombstone stays (sync bookkeeping) without its text;
        // the one no server knew goes whole.
        #expect(try db.queryOne("SELECT body_size FROM notes WHERE id = ?", synced.description) { $0.int64(0) } == 0)
        #expect(try db.queryOne("SELECT 1 FROM notes WHERE id = ?", local.description) { $0.int(0) } == nil)
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test func theTrashKeepsNotesAsLongAsTheServerKeepsItsHistoryAndRemembersThePeriod() throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.clock = clock.storeClock
        configuration.historyPruning = .manual
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let old = try store.createNote(in: .root, title: "old.md", body: Data(utf8: "old\n"))
        let fresh = try store.createNote(in: .root, title: "fresh.md", body: Data(utf8: "fresh\n"))
        try syncEverything(store, from: &version)
        try store.removeFile(in: .root, name: "old.md")
        clock.advance(seconds: 8 * 86_400)
        try store.removeFile(in: .root, name: "fresh.md")
        try syncEverything(store, from: &version)
        #expect(try store.trashEntries().map(\.noteID) == [fresh, old], "no server said: 30 days")

        // A server keeping a week: the 8-day-old deletion is no longer shown, and pruning forgets it.
        try store.rememberServerHistory(seconds: 7 * 86_400)
        #expect(try store.trashEntries().map(\.noteID) == [fresh])
        try store.pruneHistory()
        let db = try Connection(path: fixture.databasePath)
        #expect(try db.queryOne("SELECT count(*) FROM trash") { $0.int(0) } == 1)
        #expect(try db.queryOne("SELECT server_history_seconds FROM sync_state") { $0.int64(0) } == 7 * 86_400)

        // Kept in the sync state: a store opened later keeps the week too.
        let reopened = try NotesStore(path: fixture.databasePath, configuration: configuration)
        #expect(reopened.trashRetentionNanoseconds == 7 * 86_400 * 1_000_000_000)

        // A server keeping 90 days: the trash keeps as long, past the 30 of an offline profile.
        try store.rememberServerHistory(seconds: 90 * 86_400)
        clock.advance(seconds: 40 * 86_400)
        #expect(try store.trashEntries().map(\.noteID) == [fresh])
        // A server that no longer says (one from before): 30 days again.
        try store.rememberServerHistory(seconds: nil)
        #expect(try store.trashEntries().isEmpty)
        #expect(try db.queryOne("SELECT server_history_seconds IS NULL FROM sync_state") { $0.bool(0) } == true)
    }

    @Test func emptyForgetsTheTrashHereAndSendsNothing() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        let a = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "a\n"))
        try store.createNote(in: .root, title: "b.md", body: Data(utf8: "b\n"))
        try syncEverything(store, from: &version)
        try store.removeFile(in: .root, name: "a.md")
        try store.removeFile(in: .root, name: "b.md")
        try syncEverything(store, from: &version)
        #expect(try store.emptyTrash() == 2)
        #expect(try store.trashEntries().isEmpty)
        #expect(try store.freezeBatch().isEmpty, "nothing goes to the server")
        #expect(try serverVersion(fixture, a) != nil, "the tombstone keeps its place in sync")
        #expect(try store.emptyTrash() == 0)
    }

    @Test func aDeletionHeldByTheMassDeleteGuardIsNotInTheTrashUntilItGoesThrough() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        var version: Int64 = 100
        for index in 0..<10 {
            try store.createNote(in: .root, title: "n\(index).md", body: Data(utf8: "note \(index)\n"))
        }
        try syncEverything(store, from: &version)
        for index in 0..<8 { try store.removeFile(in: .root, name: "n\(index).md") }
        #expect(try store.trashEntries().count == 8, "not held yet: nothing was sent")
        #expect(try store.freezeBatch().isEmpty, "the guard holds them")
        #expect(try store.massDeleteHold().isHeld)
        #expect(try store.trashEntries().isEmpty)
        try store.confirmMassDelete()
        try syncEverything(store, from: &version)
        #expect(try store.trashEntries().count == 8)
    }

    @Test func tombstonesFromBeforeTheTrashGoInAtUpgradeUnderTheirFoldersPaths() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        let plan: NoteID
        do {
            let store = try NotesStore(path: path)
            var version: Int64 = 100
            let work = try store.makeFolders(path: ["Work"])
            plan = try store.createNote(in: work, title: "plan.md", body: Data(utf8: "the plan\n"))
            try syncEverything(store, from: &version)
            try store.removeFile(in: work, name: "plan.md")
            try store.removeDirectory(in: .root, name: "Work")
            try syncEverything(store, from: &version)
        }
        try SchemaTests.downgradeToVersion9(path)
        let store = try NotesStore(path: path)
        #expect(try Connection(path: path).userVersion == Schema.currentVersion)
        let entry = try #require(try store.trashEntries().first)
        #expect(entry.noteID == plan && entry.path == "Work/plan.md" && entry.origin == .unknown)
        #expect(try store.trashBody(entry.seq) == Data(utf8: "the plan\n"))
    }

    @Test func theMountAndTheCommandSeeOneTrashThroughTheSameFace() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let (mount, command) = (store.tree.trash, store.admin.trash)
        let work = try store.makeFolders(path: ["Work"])
        let plan = try store.createNote(in: work, title: "plan.md", body: Data(utf8: "the plan\n"))
        let todo = try store.createNote(in: .root, title: "todo.md", body: Data(utf8: "milk\n"))
        try store.removeFile(in: work, name: "plan.md")
        try store.removeFile(in: .root, name: "todo.md")

        #expect(Set(try mount.entries().map(\.noteID)) == [plan, todo])
        #expect(try command.entries() == mount.entries())
        let planEntry = try #require(try mount.entries(under: "Work").first)
        #expect(try mount.entries(under: "Work").map(\.noteID) == [plan])
        #expect(try command.entry(planEntry.seq) == planEntry)
        #expect(try command.body(planEntry.seq) == Data(utf8: "the plan\n"))
        #expect(try mount.node(named: "plan.md", in: "Work") == .note(planEntry))
        // Restored through one, gone from both.
        #expect(try mount.restoreDirectory("Work") == [plan])
        #expect(try command.entries().map(\.noteID) == [todo])
        let todoEntry = try #require(try command.entries().first)
        #expect(try command.restore(todoEntry.seq, to: .at(.root, name: "todo again.md")) == todo)
        #expect(try mount.entries().isEmpty && mount.entry(todoEntry.seq) == nil)
        #expect(try store.contents(of: .note(todo)) == Data(utf8: "milk\n"))
    }
}

extension TrashNode {
    var noteID: NoteID? {
        if case .note(let entry) = self { return entry.noteID }
        return nil
    }
}
