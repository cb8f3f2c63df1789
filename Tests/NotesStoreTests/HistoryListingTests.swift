import Foundation
import NotesModel
import SQLiteKit
import TestSupport
import Testing

@testable import NotesStore

/// Listing the local history costs what is listed, and its entries are named
/// so a person finds them: the note's path, why and when, and a number.
@Suite struct HistoryListingTests {
    /// Adds `count` entries of 6,000 bytes each (bodies span pages) straight into the history.
    static func fill(_ path: String, count: Int, note: NoteID) throws {
        try Connection(path: path).run(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            INSERT INTO history(note_id, title, body, saved_ns, reason, path, size)
            SELECT ?, 'n.md', randomblob(6000), ? + i, 'truncated', 'Work/n.md', 6000 FROM n
            """, count, note.description, Int64(Date().timeIntervalSince1970) * 1_000_000_000)
    }

    static var manual: StoreConfiguration {
        var configuration = StoreConfiguration()
        configuration.historyPruning = .manual
        return configuration
    }

    /// Lists the whole history page by page, as the mount does, and returns the work it took.
    static func listAll(_ store: NotesStore, pageEntries: Int) throws -> (entries: Int, work: WorkCounters) {
        let before = store.databaseWork()
        var after: Int64 = 0
        var entries = 0
        while true {
            let page = try store.historyPage(afterSeq: after, limit: pageEntries)
            entries += page.count
            guard let last = page.last else { break }
            after = last.seq
        }
        return (entries, store.databaseWork().since(before))
    }

    @Test func listingTheHistoryReadsOneRowPerEntryAndNoBody() throws {
        let fixture = try StoreFixture(configuration: Self.manual)
        defer { fixture.remove() }
        let note = NoteID()
        try Self.fill(fixture.databasePath, count: 1_000, note: note)
        let small = try Self.listAll(fixture.store, pageEntries: 100)
        try Self.fill(fixture.databasePath, count: 1_000, note: note)
        let large = try Self.listAll(fixture.store, pageEntries: 100)

        #expect(small.entries == 1_000)
        #expect(large.entries == 2_000)
        #expect(small.work.rows == 1_000)
        #expect(large.work.rows == 2_000)
        #expect(large.work.statements == 21, "one statement per page of 100, and the empty last one")
        // Twice the entries, twice the work: nothing per entry grows with the history.
        #expect(
            Double(large.work.virtualMachineSteps) <= 2.2 * Double(small.work.virtualMachineSteps), "\(small) \(large)")
        // 6,000-byte bodies take two pages each; the listing index holds ~50 entries a page.
        #expect(large.work.pages < 2_000 / 10, "\(large.work)")
    }

    @Test func anEntryIsNamedByItsNotesPathWhyWhenAndItsNumber() throws {
        let fixture = try StoreFixture(configuration: Self.manual)
        defer { fixture.remove() }
        let store = fixture.store
        let folder = try store.makeFolders(path: ["Work"])
        let id = try store.createNote(in: folder, title: "todo.md", body: Data(utf8: "precious text"))
        try store.truncate(.note(id), to: 0)
        let entry = try #require(try store.history().first)
        let time = HistoryEntry.localTime(entry.savedNanoseconds)
        #expect(entry.name == "Work\u{2215}todo (truncated \(time) #\(entry.seq)).md")
        #expect(time.count == 19)
        #expect(try store.historyEntry(named: entry.name)?.seq == entry.seq)
        #expect(try store.historyEntry(named: "Work\u{2215}other (truncated \(time) #\(entry.seq)).md") == nil)
        #expect(try store.historyEntry(named: "todo.md") == nil)
        // The same name in a listing page, which reads no title.
        #expect(try store.historyPage(afterSeq: 0, limit: 10).map(\.name) == [entry.name])
    }

    @Test(arguments: [
        (String(repeating: "é", count: 200) + ".md", HistoryReason.shrunk),
        ("notes #7) (draft).txt", HistoryReason.crashRecovery),
        ("no extension at all", HistoryReason.refused),
    ])
    func everyNameFitsAndLeadsBackToItsEntry(title: String, reason: HistoryReason) throws {
        let fixture = try StoreFixture(configuration: Self.manual)
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: title, body: Data(utf8: "text"))
        try Connection(path: fixture.databasePath).run(
            "INSERT INTO history(note_id, title, body, saved_ns, reason, path) VALUES (?, ?, x'00', ?, ?, ?)",
            id.description, title, Int64(Date().timeIntervalSince1970) * 1_000_000_000, reason.stored, title)
        let entry = try #require(try store.history().first)
        #expect(entry.reason == reason)
        #expect(entry.name.utf8.count <= NameCodec.maxNameBytes)
        #expect(entry.name.contains("(\(reason.words) "))
        #expect(try store.historyEntry(named: entry.name)?.seq == entry.seq)
    }

    @Test func aGoneNoteIsRestoredIntoItsOwnFolderMadeAgainIfItIsGoneToo() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let projects = try store.makeFolders(path: ["Work", "Projects"])
        let id = try store.createNote(in: projects, title: "plan.md", body: Data(utf8: "precious plan\n"))
        try store.truncate(.note(id), to: 0)
        let entry = try #require(try store.history(for: id).first)
        #expect(entry.path == "Work/Projects/plan.md")
        // The note is gone, its folder is not: back into that folder.
        try store.removeFile(in: projects, name: "plan.md")
        let back = try store.restore(historyEntry: entry.seq)
        #expect(back != id)
        #expect(try store.path(of: .note(back)) == "/Work/Projects/plan.md")
        #expect(try store.contents(of: .note(back)) == Data(utf8: "precious plan\n"))
        // The note and its folder are gone: the folder is made again.
        try store.removeFile(in: projects, name: "plan.md")
        let work = try #require(try store.lookup(in: .root, name: "Work")?.ref.directory)
        try store.removeDirectory(in: work, name: "Projects")
        #expect(try store.lookup(in: work, name: "Projects") == nil)
        let again = try store.restore(historyEntry: entry.seq)
        #expect(try store.path(of: .note(again)) == "/Work/Projects/plan.md")
        // A live note takes the text where it is now.
        try store.truncate(.note(again), to: 0)
        let kept = try #require(try store.history(for: again).first)
        let archive = try store.makeFolders(path: ["Archive"])
        let projectsAgain = try #require(try store.lookup(in: work, name: "Projects")?.ref.directory)
        _ = try store.rename(from: projectsAgain, name: "plan.md", to: archive, newName: "plan.md")
        #expect(try store.restore(historyEntry: kept.seq) == again)
        #expect(try store.path(of: .note(again)) == "/Archive/plan.md")
        #expect(try store.contents(of: .note(again)) == Data(utf8: "precious plan\n"))
    }

    @Test func anEntryShowsWhenItWasKeptInLocalTime() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "a.md", body: Data(utf8: "text\n"))
        try fixture.store.truncate(.note(id), to: 0)
        let entry = try #require(try fixture.store.history(for: id).first)
        #expect(entry.savedAtText.count == 19)
        #expect(entry.name.contains(entry.savedAtText.replacingOccurrences(of: ":", with: ".")))
    }
}
