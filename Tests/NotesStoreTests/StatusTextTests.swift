import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

/// `notesfs status` and `.notesfs/status` tell the truth: an offline folder
/// says so, a first sync shows its progress, counts are of notes, the list's
/// "… and N more" adds up, and files kept only here are named.
@Suite struct StatusTextTests {
    static let server = "https://notes.example"

    func text(_ store: NotesStore, live: LiveSync? = nil) throws -> String {
        var status = try store.status()
        status.live = live
        let text = status.humanText(nowNanoseconds: Int64(Date().timeIntervalSince1970 * 1e9))
        #expect(text.hasSuffix("\n"))
        #expect(!text.hasSuffix("\n\n"))
        return text
    }

    @Test func anOfflineFolderSaysItKeepsItsNotesHereAndListsNothingAsPending() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let work = try store.makeFolders(path: ["Work"])
        for index in 0..<1_234 {
            try store.createNote(in: index % 2 == 0 ? .root : work, title: "n\(index).md", body: Data(utf8: "x\n"))
        }
        let text = try text(store)
        #expect(
            text.hasPrefix(
                "Offline notes folder: 1,234 notes in 1 folder, kept only on this machine (no server; "
                    + "'notesfs mount --help' says how to add one)\n"), "\(text)")
        #expect(!text.contains("Not yet synced"))
        #expect(!text.contains("Pending"))
        #expect(!text.contains("Waiting"))
        #expect(!text.contains("Last successful sync"))
        #expect(text.split(separator: "\n").count == 1, "\(text)")
        let json = try #require(try JSONSerialization.jsonObject(with: store.status().json()) as? [String: Any])
        #expect(json["offline"] as? Bool == true)
        #expect(json["notes"] as? Int == 1_234)
    }

    @Test func aFirstSyncShowsHowFarItGotAndNeverSaysUpToDate() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        try store.bindServer(url: Self.server)
        // Not mounted: no run goes on.
        let waiting = try text(store)
        #expect(waiting.hasPrefix("Sync: first sync not finished (0 notes here so far); it goes on while the notes are mounted\n"))
        #expect(waiting.contains("Last successful sync: never"))
        #expect(!waiting.contains("up to date"))
        // Mounted, before the first run.
        #expect(try text(store, live: LiveSync(running: false)).hasPrefix("Sync: first sync with \(Self.server) starting\n"))
        // While it runs.
        let running = try text(
            store, live: LiveSync(running: true, received: 1_234, expectedTotal: 10_000, elapsedSeconds: 2))
        #expect(
            running.hasPrefix(
                "Sync: first sync: 1,234 of about 10,000 notes received from \(Self.server) (617/s, about 15 s left)\n"),
            "\(running)")
        #expect(!running.contains("up to date"))
        let unknown = try text(store, live: LiveSync(running: true, received: 40, elapsedSeconds: 0.1))
        #expect(unknown.hasPrefix("Sync: first sync: 40 notes received so far from \(Self.server)\n"), "\(unknown)")
        // A failing first sync says so.
        try store.recordSyncRun(succeeded: false, error: "the server did not answer")
        #expect(try text(store).hasPrefix("Sync: failing — the server did not answer\n"))
        // Done.
        try store.recordSyncRun(succeeded: true, error: nil)
        let done = try text(store)
        #expect(done.hasPrefix("Sync: up to date with \(Self.server)\n"), "\(done)")
        #expect(done.contains("Last successful sync: "))
        #expect(!done.contains("never"))
        let later = try text(store, live: LiveSync(running: true, received: 3, sent: 2, elapsedSeconds: 1.5))
        #expect(later.hasPrefix("Sync: syncing with \(Self.server) now (3 received, 2 sent, 3/s)\n"), "\(later)")
    }

    @Test func pendingWorkIsCountedInNotesAndTheListSaysHowManyMoreThereAre() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        try store.bindServer(url: Self.server)
        try store.recordSyncRun(succeeded: true, error: nil)
        var ids: [NoteID] = []
        for index in 0..<1_030 {
            ids.append(try store.createNote(in: .root, title: "n\(index).md", body: Data(utf8: "v1\n")))
        }
        // Sent but not answered, then edited again: two queued changes for each of three notes.
        _ = try store.freezeBatch()
        for id in ids.prefix(3) { try store.replaceBody(of: id, with: Data(utf8: "v2\n")) }
        let status = try store.status()
        #expect(status.pendingNotes == 1_030)
        #expect(status.pendingCount == 1_033)
        let text = try text(store)
        #expect(text.hasPrefix("Sync: 1,030 notes waiting to be sent\n"), "\(text)")
        #expect(text.contains("\nWaiting to be sent: 1,030 notes (oldest change "), "\(text)")
        #expect(text.contains("\n  /n19.md\n  … and 1,010 more\n"), "\(text)")
        _ = try store.makeFolders(path: ["Work"])
        #expect(try self.text(store).hasPrefix("Sync: 1,030 notes and 1 folder waiting to be sent\n"))
    }

    @Test func filesKeptOnlyHereAreCountedAndNamed() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        try store.createNote(in: .root, title: "note.md", body: Data(utf8: "x\n"))
        let work = try store.makeFolders(path: ["Work"])
        _ = try store.createFile(in: .root, name: ".plan")
        _ = try store.createFile(in: work, name: "~draft.md")
        let git = try #require(try store.makeDirectory(in: .root, name: ".git").ref.directory)
        for name in ["HEAD", "config", "index"] { _ = try store.createFile(in: git, name: name) }
        let text = try text(store)
        #expect(text.hasSuffix("5 files kept only here (never synced): .plan, Work/~draft.md, .git/\n"), "\(text)")
        for name in ["a.tmp", "b~", "Thumbs.db"] { _ = try store.createFile(in: .root, name: name) }
        let more = try self.text(store)
        #expect(
            more.hasSuffix("8 files kept only here (never synced): .plan, Work/~draft.md, .git/, a.tmp, b~, …\n"),
            "\(more)")
        let status = try store.status()
        #expect(status.localOnlyFiles == 8)
        #expect(status.localOnlyTopLevel == 6)
        let json = try #require(try JSONSerialization.jsonObject(with: status.json()) as? [String: Any])
        #expect(json["localOnlyFiles"] as? Int == 8)
        #expect((json["localOnly"] as? [String])?.first == ".plan")
    }
}
