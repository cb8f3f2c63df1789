import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

@Suite struct FileOperationTests {
    func outboxOps(_ fixture: StoreFixture) throws -> [String] {
        let db = try Connection(path: fixture.databasePath)
        return try db.query("SELECT entity_kind || ':' || op FROM outbox ORDER BY seq") { $0.string(0) }
    }

    /// Marks every queued change as applied, as if a sync had run.
    func syncEverything(_ store: NotesStore) throws {
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

    @Test func renameOverALiveNoteKeepsTheTargetsIdAndTakesTheSourcesBytesAndMtime() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let target = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "old"))
        try syncEverything(store)
        let temp = try store.createFile(in: .root, name: "n.md.new")
        try store.write(temp.ref, offset: 0, bytes: Data(utf8: "new text"))
        try store.setModified(temp.ref, nanoseconds: 1_234_000_000_000)
        let outcome = try store.rename(from: .root, name: "n.md.new", to: .root, newName: "n.md")
        #expect(outcome.ref == .note(target))
        #expect(try store.entry(for: outcome.ref)?.modifiedNanoseconds == 1_234_000_000_000)
        #expect(try store.contents(of: .note(target)) == Data(utf8: "new text"))
        #expect(try store.list(directory: .root).map(\.name) == ["n.md"])
        // One edit of the target; the never-sent temp note left nothing behind.
        #expect(try outboxOps(fixture) == ["note:put"])
    }

    @Test func creatingAFileWhereANoteWasJustDeletedRevivesThatNote() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "v1"))
        try syncEverything(store)
        let oldInode = try store.inode(for: .note(id))
        try store.removeFile(in: .root, name: "n.md")
        let revived = try store.createFile(in: .root, name: "n.md")
        #expect(revived.ref == .note(id))
        #expect(try store.inode(for: .note(id)) != oldInode)
        try store.write(revived.ref, offset: 0, bytes: Data(utf8: "v2"))
        #expect(try outboxOps(fixture) == ["note:put"])
    }

    @Test func vimsBackupDanceIsOneEditOfTheSameNote() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "one\n"))
        try syncEverything(store)
        _ = try store.createFile(in: .root, name: "4913")
        try store.removeFile(in: .root, name: "4913")
        _ = try store.rename(from: .root, name: "n.md", to: .root, newName: "n.md~")
        let fresh = try store.createFile(in: .root, name: "n.md")
        try store.write(fresh.ref, offset: 0, bytes: Data(utf8: "one\ntwo\n"))
        try store.removeFile(in: .root, name: "n.md~")
        #expect(fresh.ref == .note(id))
        #expect(try store.contents(of: .note(id)) == Data(utf8: "one\ntwo\n"))
        #expect(try outboxOps(fixture) == ["note:put"])
    }

    @Test func aNewLocalFileNeverInheritsTheInodeNumberOfAnUnlinkedOne() throws {
        // vim saves a.md (its backup becomes the newest local file, then goes),
        // then a temp file saved over b.md: the temp file takes the backup's
        // row number again, and must not take its inode number, which a
        // descriptor opened on a.md before the save still holds.
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let a = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "a1\n"))
        let b = try store.createNote(in: .root, title: "b.md", body: Data(utf8: "b1\n"))
        try syncEverything(store)
        let heldByAnOldDescriptor = try store.inode(for: .note(a))
        let backup = try store.rename(from: .root, name: "a.md", to: .root, newName: "a.md~")
        #expect(try store.entryRef(forInode: heldByAnOldDescriptor) == backup.ref)
        let fresh = try store.createFile(in: .root, name: "a.md")
        try store.write(fresh.ref, offset: 0, bytes: Data(utf8: "a1\na2\n"))
        try store.removeFile(in: .root, name: "a.md~")
        let temp = try store.createFile(in: .root, name: ".b.md.tmp1")
        #expect(temp.ref == backup.ref, "the row number is reused, which is what makes this case")
        #expect(try store.inode(for: temp.ref) != heldByAnOldDescriptor)
        try store.write(temp.ref, offset: 0, bytes: Data(utf8: "b1\nb2\n"))
        _ = try store.rename(from: .root, name: ".b.md.tmp1", to: .root, newName: "b.md")
        #expect(try store.entryRef(forInode: heldByAnOldDescriptor) != .note(b))
        #expect(try store.inode(for: .note(b)) != heldByAnOldDescriptor)
        #expect(try store.contents(of: .note(b)) == Data(utf8: "b1\nb2\n"))
    }

    @Test func movingANoteIntoAHiddenDirectoryAndBackRevivesIt() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "text"))
        try syncEverything(store)
        let hidden = try #require(try store.makeDirectory(in: .root, name: ".hidden").ref.directory)
        _ = try store.rename(from: .root, name: "n.md", to: hidden, newName: "n.md")
        #expect(try outboxOps(fixture) == ["note:delete"])
        let back = try store.rename(from: hidden, name: "n.md", to: .root, newName: "n.md")
        #expect(back.ref == .note(id))
        #expect(try store.contents(of: .note(id)) == Data(utf8: "text"))
        #expect(try outboxOps(fixture) == ["note:put"])
    }

    @Test func localOnlyNamesNeverReachTheOutbox() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        for name in [".n.md.swp", "n.md~", "4913", "#n.md#", ".DS_Store", "x.tmp", "y.part"] {
            let entry = try store.createFile(in: .root, name: name)
            try store.write(entry.ref, offset: 0, bytes: Data(utf8: "scratch"))
        }
        let git = try #require(try store.makeDirectory(in: .root, name: ".git").ref.directory)
        let objects = try #require(try store.makeDirectory(in: git, name: "objects").ref.directory)
        let object = try store.createFile(in: objects, name: "abc123")
        try store.write(object.ref, offset: 0, bytes: Data(utf8: "blob"))
        _ = try store.makeSymlink(in: .root, name: ".#n.md", target: "user@host.123")
        #expect(try outboxOps(fixture).isEmpty)
        #expect(try store.readLink(try #require(try store.lookup(in: .root, name: ".#n.md")).ref) == "user@host.123")
        #expect(throws: StoreError.self) { _ = try store.makeSymlink(in: .root, name: "n.md", target: "x") }
    }

    @Test func aDirectoryCannotCrossTheLocalOnlyLine() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        _ = try store.makeDirectory(in: .root, name: "Work")
        _ = try store.makeDirectory(in: .root, name: ".stash")
        #expect(throws: StoreError.crossesLocalOnlyLine("Work")) {
            _ = try store.rename(from: .root, name: "Work", to: .root, newName: ".archive")
        }
        #expect(throws: StoreError.crossesLocalOnlyLine("stash")) {
            _ = try store.rename(from: .root, name: ".stash", to: .root, newName: "stash")
        }
    }

    @Test func aFolderCannotMoveIntoItsOwnChild() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let child = try store.makeFolders(path: ["a", "b"])
        #expect(throws: StoreError.wouldCreateCycle("a")) {
            _ = try store.rename(from: .root, name: "a", to: child, newName: "a")
        }
    }

    @Test func posixErrorsForCommonMistakes() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try #require(try store.makeDirectory(in: .root, name: "Work").ref.directory)
        try store.createNote(in: work, title: "n.md", body: Data())
        #expect(throws: StoreError.notEmpty("Work")) { try store.removeDirectory(in: .root, name: "Work") }
        #expect(throws: StoreError.alreadyExists("Work")) { _ = try store.makeDirectory(in: .root, name: "Work") }
        #expect(throws: StoreError.alreadyExists("n.md")) { _ = try store.createFile(in: work, name: "n.md") }
        #expect(throws: StoreError.self) { _ = try store.createFile(in: .root, name: String(repeating: "x", count: 256)) }
        #expect(throws: StoreError.alreadyExists(".notesfs")) { _ = try store.createFile(in: .root, name: ".notesfs") }
        #expect(throws: StoreError.notFound("missing")) { try store.removeFile(in: .root, name: "missing") }
        #expect(throws: StoreError.isADirectory("Work")) { try store.removeFile(in: .root, name: "Work") }
        #expect(throws: StoreError.alreadyExists("n.md")) {
            try store.createNote(in: .root, title: "n.md", body: Data())
            _ = try store.rename(from: .root, name: "n.md", to: work, newName: "n.md", noReplace: true)
        }
    }

    @Test func aNoteNeverGrowsPastTheSizeLimitAndNothingStoredIsTouched() throws {
        var configuration = StoreConfiguration()
        configuration.noteSizeLimitBytes = 1_000
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "n", body: Data(utf8: "keep"))
        #expect(throws: StoreError.tooLarge(limit: 1_000)) {
            try fixture.store.write(.note(id), offset: 990, bytes: Data(count: 20))
        }
        #expect(try fixture.store.contents(of: .note(id)) == Data(utf8: "keep"))
    }

    @Test func aNeverSentNoteDeletedAndMadeAgainKeepsItsIdUntilTheNextSession() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "v1"))
        try store.removeFile(in: .root, name: "n.md")
        #expect(try outboxOps(fixture).isEmpty, "nothing to send for a note the server never heard of")
        let again = try store.createFile(in: .root, name: "n.md", mode: 0o644, exclusive: true)
        #expect(again.ref == .note(id))
        #expect(try outboxOps(fixture) == ["note:put"])
        // Deleted again and left: the next session no longer revives it at
        // its path (it stays in the trash, with its text, until emptied).
        try store.removeFile(in: .root, name: "n.md")
        try store.beginSession()
        #expect(try store.trashEntries().map(\.noteID) == [id])
        let fresh = try store.createFile(in: .root, name: "n.md", mode: 0o644, exclusive: true)
        #expect(fresh.ref != .note(id))
        try store.emptyTrash()
        let db = try Connection(path: fixture.databasePath)
        #expect(try db.queryOne("SELECT count(*) FROM notes WHERE id = ?", id.description) { $0.int64(0) } == 0)
    }

    @Test func displayNamesAreStickyWhenATwinArrives() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let mine = try store.createNote(in: .root, title: "todo.md", body: Data(utf8: "mine"))
        let twin = NoteID()
        try store.applyPulled(
            [RemoteEntity(.note(twin), version: 4, deleted: false,
                          note: NoteContent(title: "todo.md", body: Data(utf8: "theirs"), folderID: nil))],
            cursor: "c1")
        #expect(try store.lookup(in: .root, name: "todo.md")?.ref == .note(mine))
        #expect(try store.lookup(in: .root, name: "todo (2).md")?.ref == .note(twin))
        // Deleting the first does not rename the twin: names stay until their own title changes.
        try store.removeFile(in: .root, name: "todo.md")
        #expect(try store.lookup(in: .root, name: "todo (2).md")?.ref == .note(twin))
    }

    @Test func aPulledChangeNeverOverwritesDirtyText() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data(utf8: "v1"))
        try syncEverything(store)
        try store.replaceBody(of: id, with: Data(utf8: "local edit"))
        let report = try store.applyPulled(
            [RemoteEntity(.note(id), version: 500, deleted: false,
                          note: NoteContent(title: "n", body: Data(utf8: "remote"), folderID: nil))],
            cursor: "c")
        #expect(report.skippedDirty == 1)
        #expect(try store.contents(of: .note(id)) == Data(utf8: "local edit"))
    }

    @Test func aPulledFolderDeletionMovesItsNotesToTheRootAndKeepsLocalFiles() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeDirectory(in: .root, name: "Work").ref
        guard case .folder(let folderID) = work else { throw StoreError.notFound("Work") }
        let note = try store.createNote(in: .folder(folderID), title: "n.md", body: Data(utf8: "x"))
        try syncEverything(store)
        _ = try store.createFile(in: .folder(folderID), name: ".n.md.swp")
        try store.applyPulled(
            [RemoteEntity(.folder(folderID), version: 900, deleted: true)], cursor: "c")
        #expect(try store.path(of: .note(note)) == "/n.md")
        let kept = try #require(try store.lookup(in: .root, name: "Work"))
        guard case .local = kept.ref else { Issue.record("Work should stay as a local-only directory"); return }
        #expect(try store.list(directory: try #require(kept.ref.directory)).map(\.name) == [".n.md.swp"])
    }

    @Test func searchFindsNewEditedAndRenamedTextAndForgetsDeletedText() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "groceries", body: Data(utf8: "buy milk"))
        #expect(try store.search("milk").map(\.noteID) == [id])
        try store.replaceBody(of: id, with: Data(utf8: "buy bread"))
        #expect(try store.search("milk").isEmpty)
        #expect(try store.search("bread").map(\.noteID) == [id])
        _ = try store.rename(from: .root, name: "groceries", to: .root, newName: "shopping")
        #expect(try store.search("shopping").map(\.path) == ["/shopping"])
        #expect(try store.search("groceries").isEmpty)
        try store.removeFile(in: .root, name: "shopping")
        #expect(try store.search("bread").isEmpty)
        #expect(try store.search("\"unbalanced AND (").isEmpty)
    }

    @Test func searchShowsEachHitAtItsShownPathWithTheWordsAroundIt() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        guard case .folder(let work) = try store.makeDirectory(in: .root, name: "Work").ref,
            case .folder(let plans) = try store.makeDirectory(in: .folder(work), name: "Plans").ref
        else { throw StoreError.notFound("folders") }
        let todo = try store.createNote(in: .folder(plans), title: "todo.md", body: Data(utf8: "call the bank\nbuy milk"))
        let first = try store.createNote(in: .root, title: "twin", body: Data(utf8: "milk one"))
        let second = try store.createNote(in: .root, title: "twin", body: Data(utf8: "milk two"))
        let hits = Dictionary(uniqueKeysWithValues: try store.search("MILK").map { ($0.noteID, $0) })
        #expect(hits[todo]?.path == "/Work/Plans/todo.md")
        #expect(hits[todo]?.snippet == "call the bank\nbuy [milk]")
        #expect(hits[first]?.path == "/twin")
        #expect(hits[second]?.path == "/twin (2)")
        #expect(hits[second]?.snippet == "[milk] two")
    }

    @Test func aTruncationKeepsTheOldBytesInTheHistoryAndRestoreBringsThemBack() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data(utf8: "precious text"))
        try store.truncate(.note(id), to: 0)
        let entry = try #require(try store.history(for: id).first)
        #expect(entry.reason == .truncated)
        #expect(try store.historyBody(entry.seq) == Data(utf8: "precious text"))
        try store.restore(historyEntry: entry.seq)
        #expect(try store.contents(of: .note(id)) == Data(utf8: "precious text"))
        // Shrinking by more than half is kept too.
        try store.replaceBody(of: id, with: Data(utf8: "precious text, and more of it"))
        try store.replaceBody(of: id, with: Data(utf8: "prec"))
        #expect(try store.history(for: id).first?.reason == .shrunk)
    }

    @Test(arguments: [
        "a/b", "nul\u{0}inside", "two\nlines", "10 KB", "", ".", "..", ".notesfs",
    ])
    func oddTitlesFromElsewhereAreShownUnderValidNamesAndKeptExactly(title argument: String) throws {
        let title = argument == "10 KB" ? String(repeating: "long é ", count: 1_500) : argument
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = NoteID()
        try fixture.store.applyPulled(
            [RemoteEntity(.note(id), version: 1, deleted: false,
                          note: NoteContent(title: title, body: Data(utf8: "x"), folderID: nil))],
            cursor: nil)
        let entry = try #require(try fixture.store.list(directory: .root).first)
        #expect(NameCodec.isValidFileName(entry.name))
        #expect(entry.name != ".notesfs")
        #expect(try fixture.store.search("x").first?.title == title)
    }

    @Test func invalidUTF8BodiesComeBackByteIdentical() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let bytes = Data([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x0a, 0xe2, 0x82])
        let id = try fixture.store.createNote(in: .root, title: "bin", body: bytes)
        #expect(try fixture.store.contents(of: .note(id)) == bytes)
        #expect(try fixture.store.read(.note(id), offset: 2, count: 3) == Data([0x00, 0xc3, 0x28]))
        _ = try fixture.store.search("anything")
    }

    @Test func aFailureBetweenTheRowAndItsOutboxRowLeavesNothingHalfWritten() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "n", body: Data(utf8: "before"))
        try syncEverything(fixture.store)
        let saboteur = try Connection(path: fixture.databasePath)
        try saboteur.execute(
            "CREATE TRIGGER sabotage BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
        #expect(throws: StoreError.self) { try fixture.store.replaceBody(of: id, with: Data(utf8: "after")) }
        #expect(throws: StoreError.self) { try fixture.store.createNote(in: .root, title: "m", body: Data()) }
        #expect(throws: StoreError.self) { try fixture.store.removeFile(in: .root, name: "n") }
        try saboteur.execute("DROP TRIGGER sabotage")
        #expect(try fixture.store.contents(of: .note(id)) == Data(utf8: "before"))
        #expect(try fixture.store.lookup(in: .root, name: "m") == nil)
        #expect(try fixture.store.lookup(in: .root, name: "n") != nil)
        #expect(try outboxOps(fixture).isEmpty)
    }
}
