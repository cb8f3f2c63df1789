import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncServer
import SyncServerSQLite
import TestSupport
import Testing

/// A server put back from an older copy without a new epoch (nobody ran
/// `notesfs server new-epoch`, and the server could not tell): a resync
/// never deletes what the server merely lacks.
@Suite struct ServerWentBackTests {
    func text(_ store: NotesStore, _ name: String, in folder: FolderID? = nil) throws -> String? {
        let directory: DirectoryRef = folder.map { .folder($0) } ?? .root
        guard let entry = try store.lookup(in: directory, name: name) else { return nil }
        return String(decoding: try store.contents(of: entry.ref), as: UTF8.self)
    }

    /// `devices` re-pointed at a server on `backup`, with the same epoch.
    func restoreWithoutNewEpoch(
        _ world: SyncWorld, from backup: String, devices: [SyncWorld.Device]
    ) throws -> (SyncServer, [SyncWorld.Device]) {
        let server = SyncServer(store: try SQLiteServerStore(path: backup))
        return (server, try world.devices(devices, movedTo: server))
    }

    @Test func everyNoteAndFolderMadeSinceTheCopyIsKeptOnEveryMachineAndSentBack() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let old = try a.store.createNote(in: .root, title: "old.md", body: Data("old\n".utf8))
        try await world.syncToQuiet([a, b])
        let backup = try world.backupServer(to: "backup.sqlite")
        try a.store.replaceBody(of: old, with: Data("old\nedited later\n".utf8))
        try a.store.createNote(in: .root, title: "new.md", body: Data("new\n".utf8))
        guard case .folder(let folder) = try a.store.makeDirectory(in: .root, name: "Later").ref else {
            Issue.record("makeDirectory made no folder")
            return
        }
        try a.store.createNote(in: .folder(folder), title: "in.md", body: Data("in\n".utf8))
        try b.store.createNote(in: .root, title: "b.md", body: Data("b\n".utf8))
        try await world.syncToQuiet([a, b])

        let (server, devices) = try restoreWithoutNewEpoch(world, from: backup, devices: [a, b])
        try await world.syncToQuiet(devices)
        for device in devices {
            #expect(try text(device.store, "old.md") == "old\nedited later\n")
            #expect(try text(device.store, "new.md") == "new\n")
            #expect(try text(device.store, "b.md") == "b\n")
            #expect(try text(device.store, "in.md", in: folder) == "in\n")
            #expect(try device.store.status().noteCount == 4)
        }
        // The restored server got everything back, with the same ids.
        let c = try world.device("c")
        let transport = InProcessTransport(server: server, token: world.token)
        let viewer = try SyncEngine(replica: c.store.replica, transport: transport)
        #expect(await viewer.sync().succeeded)
        #expect(try text(c.store, "old.md") == "old\nedited later\n")
        #expect(try text(c.store, "new.md") == "new\n")
        #expect(try text(c.store, "in.md", in: folder) == "in\n")
        #expect(try c.store.lookup(in: .root, name: "old.md")?.ref == .note(old))
    }

    @Test func aServerBehindOurVersionsRebasesEvenWhenItsCounterPassedOurCursor() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let old = try a.store.createNote(in: .root, title: "old.md", body: Data("old\n".utf8))
        try await world.syncToQuiet([a, b])
        let backup = try world.backupServer(to: "backup.sqlite")
        try a.store.replaceBody(of: old, with: Data("old\nedited later\n".utf8))
        try await world.syncToQuiet([a, b])
        let (server, devices) = try restoreWithoutNewEpoch(world, from: backup, devices: [a, b])
        // The restored server holds old.md at a version below the one a holds:
        // a's edit was lost there and must go back, not be taken as current.
        let restoredA = devices[0]
        let outcome = await restoredA.engine.sync()
        #expect(outcome.succeeded)
        try await world.syncToQuiet(devices)
        let c = try world.device("c")
        let viewer = try SyncEngine(
            replica: c.store.replica, transport: InProcessTransport(server: server, token: world.token))
        #expect(await viewer.sync().succeeded)
        #expect(try text(c.store, "old.md") == "old\nedited later\n")
    }

    @Test func theStoreKeepsAndQueuesARowTheServerLacksInsteadOfDeletingIt() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "kept.md", body: Data("text\n".utf8))
        let batch = try store.freezeBatch(maxCount: 10, maxBytes: 1 << 20)
        try store.settle(batch.map { ($0.changeID, .applied(version: 7)) }, cursor: CursorAdvance(expected: nil, new: "e.7"))
        #expect(try store.status().pendingCount == 0)
        let report = try store.applyResync(index: [], fetched: [], epochChanged: false, cursor: "e.3")
        #expect(report.recreated == 1)
        #expect(report.deleted == 0)
        #expect(try store.lookup(in: .root, name: "kept.md")?.ref == .note(id))
        let queued = try store.freezeBatch(maxCount: 10, maxBytes: 1 << 20)
        #expect(queued.count == 1)
        #expect(queued.first?.baseVersion == nil, "sent again as a create")
        #expect(queued.first?.note?.body == Data("text\n".utf8))
    }
}
