import Foundation
import NotesModel
import SQLiteKit
import TestSupport
import Testing

@testable import NotesStore

/// A revert makes the notes and folders within its paths as a past tree
/// says, as local edits: same ids, deleted ones revived, later ones into the
/// trash.
@Suite struct RevertTests {
    /// The live notes and folders as a past tree (what the server's history would return).
    func snapshot(_ fixture: StoreFixture) throws -> [PastEntity] {
        let db = try Connection(path: fixture.databasePath)
        let notes = try db.query("SELECT id, title, body, folder_id FROM notes WHERE deleted = 0") { row in
            PastEntity(
                id: UUID(uuidString: row.string(0)) ?? UUID(),
                content: .note(NoteContent(title: row.string(1), body: row.data(2), folderID: row.optionalString(3).flatMap(FolderID.init))))
        }
        let folders = try db.query("SELECT id, name, parent_id FROM folders WHERE deleted = 0") { row in
            PastEntity(
                id: UUID(uuidString: row.string(0)) ?? UUID(),
                content: .folder(FolderContent(name: row.string(1), parentID: row.optionalString(2).flatMap(FolderID.init))))
        }
        return notes + folders
    }

    func text(_ store: NotesStore, _ path: String) throws -> String? {
        var directory = DirectoryRef.root
        let components = path.split(separator: "/").map(String.init)
        for name in components.dropLast() {
            guard let next = try store.lookup(in: directory, name: name)?.ref.directory else { return nil }
            directory = next
        }
        guard let name = components.last, let entry = try store.lookup(in: directory, name: name) else { return nil }
        return String(decoding: try store.contents(of: entry.ref), as: UTF8.self)
    }

    @Test func everythingGoesBackAsItWasWithTheSameIds() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeFolders(path: ["Work"])
        let plan = try store.createNote(in: work, title: "plan.md", body: Data(utf8: "one\ntwo\n"))
        let todo = try store.createNote(in: .root, title: "todo.md", body: Data(utf8: "buy milk\n"))
        let past = try snapshot(fixture)

        try store.replaceBody(of: plan, with: Data(utf8: "one\nTWO\nthree\n"))
        try store.removeFile(in: .root, name: "todo.md")
        _ = try store.createNote(in: work, title: "later.md", body: Data(utf8: "made after\n"))
        _ = try store.rename(from: .root, name: "Work", to: .root, newName: "Job")

        let plan1 = try store.revertPlan(to: past, within: [])
        #expect(plan1.map(\.description).sorted() == [
            "change   Job/ -> Work/",
            "change   Job/plan.md -> Work/plan.md (+1 -2 lines)",
            "delete   Job/later.md (to the trash)",
            "restore  todo.md",
        ])
        #expect(try text(store, "Job/plan.md") == "one\nTWO\nthree\n", "a plan changes nothing")

        let done = try store.revert(to: past, within: [])
        #expect(done.count == 4)
        #expect(try text(store, "Work/plan.md") == "one\ntwo\n")
        #expect(try text(store, "todo.md") == "buy milk\n")
        #expect(try store.lookup(in: .root, name: "Job") == nil)
        #expect(try store.noteID(atPath: "Work/plan.md") == plan && store.noteID(atPath: "todo.md") == todo)
        #expect(try store.trashEntries().map(\.path) == ["Job/later.md"], "what came later is in the trash, where it was")
        #expect(try store.revertPlan(to: past, within: []).isEmpty, "a second revert has nothing to do")
    }

    @Test func aRevertWithinAFolderLeavesTheRestAlone() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeFolders(path: ["Work"])
        let plan = try store.createNote(in: work, title: "plan.md", body: Data(utf8: "plan\n"))
        let todo = try store.createNote(in: .root, title: "todo.md", body: Data(utf8: "buy milk\n"))
        let past = try snapshot(fixture)

        try store.removeFile(in: work, name: "plan.md")
        try store.removeDirectory(in: .root, name: "Work")
        try store.replaceBody(of: todo, with: Data(utf8: "buy bread\n"))

        let done = try store.revert(to: past, within: ["Work/"])
        #expect(done.map(\.description).sorted() == ["restore  Work/", "restore  Work/plan.md"])
        #expect(try text(store, "Work/plan.md") == "plan\n")
        #expect(try store.noteID(atPath: "Work/plan.md") == plan)
        #expect(try text(store, "todo.md") == "buy bread\n", "outside the path nothing changes")
    }

    @Test func aFolderMadeLaterThatHoldsLocalOnlyFilesStays() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        _ = try store.createNote(in: .root, title: "todo.md", body: Data(utf8: "buy milk\n"))
        let past = try snapshot(fixture)
        let code = try store.makeFolders(path: ["code"])
        _ = try store.createNote(in: code, title: "notes.md", body: Data(utf8: "later\n"))
        _ = try store.createFile(in: code, name: "build.tmp", mode: 0o644)

        let done = try store.revert(to: past, within: [])
        #expect(done.map(\.description).sorted() == [
            "delete   code/notes.md (to the trash)", "keep     code/ (it holds local-only files)",
        ])
        #expect(try store.lookup(in: code, name: "build.tmp") != nil)
        #expect(try store.lookup(in: code, name: "notes.md") == nil)
    }

    @Test func twoFoldersThatTradedPlacesTradeBack() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let outer = try store.makeFolders(path: ["A", "B"])
        _ = try store.createNote(in: outer, title: "n.md", body: Data(utf8: "n\n"))
        let past = try snapshot(fixture)
        // A/B becomes B/A.
        _ = try store.rename(from: try #require(store.lookup(in: .root, name: "A")?.ref.directory), name: "B", to: .root, newName: "B")
        _ = try store.rename(from: .root, name: "A", to: try #require(store.lookup(in: .root, name: "B")?.ref.directory), newName: "A")
        #expect(try text(store, "B/n.md") == "n\n")

        try store.revert(to: past, within: [])
        #expect(try text(store, "A/B/n.md") == "n\n")
        #expect(try store.lookup(in: .root, name: "B") == nil)
    }

    @Test func aFolderNeverSeenHereWhoseFolderWasGoneAtTheMomentComesBackInTheRootAsNew() throws {
        // At the moment the server held Home inside Old, and Old was already
        // deleted (every machine showed Home in the root). This machine never
        // had either; it comes back in the root, where it was shown, as a
        // folder made again, and the plan says so.
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let old = FolderTree.derivedFolderID(parent: nil, name: "Old")
        let home = FolderTree.derivedFolderID(parent: old, name: "Home")
        let past = [PastEntity(id: home.uuid, content: .folder(FolderContent(name: "Home", parentID: old)))]

        let plan = try store.revertPlan(to: past, within: [])
        #expect(plan.map(\.description) == ["create   Home/ (as new: this machine never saw it)"])
        try store.revert(to: past, within: [])
        let made = try #require(try store.lookup(in: .root, name: "Home")?.ref.directory)
        #expect(made == .folder(FolderTree.derivedFolderID(parent: nil, name: "Home")))
    }

    @Test func linesAddedAndRemovedAreCountedAsLines() {
        #expect(NotesStore.lineChanges(from: Data(utf8: "a\nb\n"), to: Data(utf8: "a\nb\nc\n")) == (1, 0))
        #expect(NotesStore.lineChanges(from: Data(utf8: "a\nb"), to: Data(utf8: "a\n")) == (0, 1))
        #expect(NotesStore.lineChanges(from: Data(), to: Data(utf8: "x\ny\n")) == (2, 0))
        #expect(NotesStore.lineChanges(from: Data(utf8: "x\nx\n"), to: Data(utf8: "x\n")) == (0, 1))
    }
}
