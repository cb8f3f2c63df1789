import Foundation
import NotesModel
import TestSupport
import Testing

@testable import NotesStore

/// A directory's link count is 2 plus its subdirectories (folders and
/// local-only directories, never notes), as tools that trust `st_nlink` expect.
@Suite struct LinkCountTests {
    func subdirectories(_ store: NotesStore, _ ref: EntryRef) throws -> Int? {
        try store.entry(for: ref)?.subdirectories
    }

    @Test func foldersAndLocalDirectoriesCountAndNotesDoNot() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeDirectory(in: .root, name: "Work")
        _ = try store.makeDirectory(in: .root, name: "Home")
        _ = try store.makeDirectory(in: .root, name: ".git")
        _ = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "a"))
        _ = try store.createFile(in: .root, name: ".scratch")
        #expect(try subdirectories(store, .root) == 3)
        guard let workDirectory = work.ref.directory else { Issue.record("not a directory"); return }
        #expect(try subdirectories(store, work.ref) == 0)
        _ = try store.createNote(in: workDirectory, title: "plan.md", body: Data(utf8: "p"))
        let inner = try store.makeDirectory(in: workDirectory, name: "2025")
        let hidden = try store.makeDirectory(in: workDirectory, name: ".cache")
        #expect(try subdirectories(store, work.ref) == 2)
        // A listing carries the same counts.
        let listed = try store.list(directory: .root).first { $0.name == "Work" }
        #expect(listed?.subdirectories == 2)
        guard let hiddenDirectory = hidden.ref.directory else { Issue.record("not a directory"); return }
        _ = try store.makeDirectory(in: hiddenDirectory, name: "objects")
        #expect(try subdirectories(store, hidden.ref) == 1)
        #expect(try subdirectories(store, inner.ref) == 0)
    }

    @Test func rmdirAndRenameMoveTheCounts() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let a = try store.makeDirectory(in: .root, name: "a")
        let b = try store.makeDirectory(in: .root, name: "b")
        guard let aDirectory = a.ref.directory, let bDirectory = b.ref.directory else {
            Issue.record("not directories")
            return
        }
        _ = try store.makeDirectory(in: aDirectory, name: "child")
        _ = try store.makeDirectory(in: aDirectory, name: "gone")
        #expect(try subdirectories(store, a.ref) == 2)
        try store.removeDirectory(in: aDirectory, name: "gone")
        #expect(try subdirectories(store, a.ref) == 1)
        _ = try store.rename(from: aDirectory, name: "child", to: bDirectory, newName: "child", noReplace: false)
        #expect(try subdirectories(store, a.ref) == 0)
        #expect(try subdirectories(store, b.ref) == 1)
        _ = try store.rename(from: .root, name: "b", to: aDirectory, newName: "b", noReplace: false)
        #expect(try subdirectories(store, .root) == 1)
        #expect(try subdirectories(store, a.ref) == 1)
    }
}
