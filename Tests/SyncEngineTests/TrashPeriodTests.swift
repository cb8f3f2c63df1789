import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncServer
import TestSupport
import Testing

/// The trash kept as long as the server keeps its history: the period comes
/// with the changes pages, and a note restored after the server forgot its
/// tombstone still comes back as the same note everywhere.
@Suite struct TrashPeriodTests {
    @Test func theEngineKeepsTheServersHistoryPeriodAndTheTrashFollowsIt() async throws {
        let world = try await SyncWorld(configuration: SyncServer.Configuration(historyRetentionSeconds: 7 * 86_400))
        defer { world.remove() }
        let laptop = try world.device("laptop")
        #expect(laptop.store.trashRetentionNanoseconds == 30 * 86_400 * 1_000_000_000, "offline: 30 days")
        #expect(await laptop.engine.sync() == .succeeded)
        #expect(laptop.store.trashRetentionNanoseconds == 7 * 86_400 * 1_000_000_000)
    }

    @Test func aNoteRestoredAfterTheServerForgotItsTombstoneComesBackAsTheSameNoteEverywhere() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let laptop = try world.device("laptop"), phone = try world.device("phone")
        let work = try laptop.store.makeFolders(path: ["Work"])
        let id = try laptop.store.createNote(in: work, title: "plan.md", body: Data("the plan\n".utf8))
        try await world.syncToQuiet([laptop, phone])
        try laptop.store.removeFile(in: work, name: "plan.md")
        try await world.syncToQuiet([laptop, phone])
        #expect(try phone.store.trashEntries().map(\.noteID) == [id])

        // The server's tombstone retention passes (a server keeping
        // tombstones shorter than this machine's trash): it forgets the note.
        let report = try await world.serverStore.purge(before: Date().addingTimeInterval(60))
        #expect(report.tombstones >= 1)
        let entry = try #require(try laptop.store.trashEntries().first)
        try laptop.store.restoreFromTrash(entry.seq)
        // The put on the forgotten tombstone meets "unknown to the server",
        // merges as edit-beats-delete and goes again as a create of the same id.
        try await world.syncToQuiet([laptop, phone])
        for device in [laptop, phone] {
            let found = try #require(try device.store.lookup(in: work, name: "plan.md"))
            #expect(found.ref == .note(id))
            #expect(try device.store.contents(of: found.ref) == Data("the plan\n".utf8))
            #expect(try device.store.trashEntries().isEmpty)
        }
    }
}
