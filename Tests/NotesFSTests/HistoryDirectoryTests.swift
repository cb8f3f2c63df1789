import Foundation
import FuseKit
import NotesModel
import SQLiteKit
import TestSupport
import Testing

@testable import NotesFS
@testable import NotesStore

/// `.notesfs/history` listed the way the kernel asks for it (a page per
/// getdents, each continuing from the last offset) costs one row per entry
/// listed, however large the history; no mount needed.
@Suite struct HistoryDirectoryCostTests {
    /// Lists `.notesfs/history` in pages of `pageEntries`; returns the names and the store's work.
    static func listLikeTheKernel(_ control: ControlDirectory, pageEntries: Int) throws
        -> (names: [String], work: WorkCounters)
    {
        let before = control.tree.store.databaseWork()
        var names: [String] = []
        var offset: Int64 = 0
        while true {
            var page: [DirectoryEntry] = []
            try control.list(
                directoryInode: ControlDirectory.inode(.history), offset: offset, uid: 0, gid: 0,
                reply: { attributes in
                    EntryReply(attributes: attributes, generation: 1, entryTimeoutSeconds: 1, attributeTimeoutSeconds: 1)
                },
                add: { entry in
                    guard page.count < pageEntries else { return false }
                    page.append(entry)
                    return true
                })
            guard let last = page.last else { break }
            names += page.map(\.name)
            offset = last.offset
        }
        return (names, control.tree.store.databaseWork().since(before))
    }

    @Test func listingTwiceTheEntriesCostsTwiceTheRows() throws {
        var configuration = StoreConfiguration()
        configuration.historyPruning = .manual
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let control = ControlDirectory(tree: fixture.store.tree)
        let note = NoteID()
        try HistoryListing.fill(fixture.databasePath, count: 500, note: note)
        let small = try Self.listLikeTheKernel(control, pageEntries: 100)
        try HistoryListing.fill(fixture.databasePath, count: 500, note: note)
        let large = try Self.listLikeTheKernel(control, pageEntries: 100)

        #expect(small.names.count == 502 && large.names.count == 1_002, "with . and ..")
        #expect(Set(large.names).count == 1_002, "no entry twice")
        // One row per entry, plus at most one batch a page reads past what fits.
        #expect(large.work.rows <= 1_000 + Int64(ControlDirectory.historyBatchEntries) * 11, "\(large.work)")
        #expect(
            Double(large.work.virtualMachineSteps) <= 2.2 * Double(small.work.virtualMachineSteps),
            "\(small.work) \(large.work)")
        #expect(large.work.pages < 1_000 / 5, "no body read: \(large.work)")
    }

    @Test func anEntryIsFoundByItsListedNameOnlyAndReadsItsBytes() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let control = ControlDirectory(tree: store.tree)
        let id = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "precious"))
        try store.truncate(.note(id), to: 0)
        let listed = try Self.listLikeTheKernel(control, pageEntries: 10).names.filter { $0 != "." && $0 != ".." }
        let name = try #require(listed.first)
        #expect(name.hasPrefix("n (truncated "))
        let history = ControlDirectory.inode(.history)
        let node = try #require(control.child(ofInode: history, name: name))
        #expect(try control.content(node) == Data(utf8: "precious"))
        #expect(try control.attributes(node, uid: 0, gid: 0).size == 8)
        #expect(control.child(ofInode: history, name: "x" + name) == nil)
    }
}

/// Fills the history of a store's database directly.
enum HistoryListing {
    static func fill(_ path: String, count: Int, note: NoteID) throws {
        try Connection(path: path).run(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            INSERT INTO history(note_id, title, body, saved_ns, reason, path, size)
            SELECT ?, 'n.md', randomblob(6000), ? + i, 'truncated', 'Work/n.md', 6000 FROM n
            """, count, note.description, Int64(Date().timeIntervalSince1970) * 1_000_000_000)
    }
}
