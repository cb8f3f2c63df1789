import Foundation
import NotesModel
import NotesStore
import SyncEngine
import SyncProtocol
import SyncServer
import TestSupport
import Testing

@Suite struct ResyncTests {
    func text(_ store: NotesStore, _ name: String) throws -> String? {
        guard let entry = try store.lookup(in: .root, name: name) else { return nil }
        return String(decoding: try store.contents(of: entry.ref), as: UTF8.self)
    }

    @Test func anExpiredCursorResyncsDeletingOnlyWhatTheServerDeletedAndKeepingDirtyText() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        try a.store.createNote(in: .root, title: "gone.md", body: Data("x\n".utf8))
        let kept = try a.store.createNote(in: .root, title: "kept.md", body: Data("v1\n".utf8))
        try await world.syncToQuiet([a, b])
        // b goes offline; a deletes one note and the server forgets the tombstone.
        try a.store.removeFile(in: .root, name: "gone.md")
        #expect(await a.engine.sync().succeeded)
        try b.store.replaceBody(of: kept, with: Data("v1\nb offline\n".utf8))
        _ = try await world.server.store.purge(before: Date().addingTimeInterval(3_600))
        let outcome = await b.engine.sync()
        #expect(outcome.succeeded)
        #expect(try text(b.store, "gone.md") == nil)
        #expect(try text(b.store, "kept.md") == "v1\nb offline\n")
        try await world.syncToQuiet([a, b])
        #expect(try text(a.store, "kept.md") == "v1\nb offline\n")
    }

    @Test func aServerRestoredFromAnOlderCopyGetsEveryNewerNoteBackAndDeletesNothing() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let old = try a.store.createNote(in: .root, title: "old.md", body: Data("old\n".utf8))
        try await world.syncToQuiet([a, b])
        let backup = try world.backupServer(to: "backup.sqlite")
        try a.store.replaceBody(of: old, with: Data("old\nedited later\n".utf8))
        try a.store.createNote(in: .root, title: "new.md", body: Data("new\n".utf8))
        try await world.syncToQuiet([a, b])

        // The server is replaced by the older copy and given a new epoch.
        let restored = try SQLiteServerStore(path: backup)
        _ = try await restored.newEpoch()
        let server = SyncServer(store: restored)
        let devices = try [a, b].map { device in
            let transport = InProcessTransport(server: server, token: world.token)
            return SyncWorld.Device(
                store: device.store, transport: transport,
                engine: try SyncEngine(store: device.store, transport: transport))
        }
        try await world.syncToQuiet(devices)
        for device in devices {
            #expect(try text(device.store, "old.md") == "old\nedited later\n")
            #expect(try text(device.store, "new.md") == "new\n")
        }
        let fresh = try world.device("c")
        let viewer = SyncWorld.Device(
            store: fresh.store, transport: InProcessTransport(server: server, token: world.token),
            engine: try SyncEngine(
                store: fresh.store, transport: InProcessTransport(server: server, token: world.token)))
        #expect(await viewer.engine.sync().succeeded)
        #expect(try text(fresh.store, "new.md") == "new\n")
        #expect(try text(fresh.store, "old.md") == "old\nedited later\n")
    }

    @Test func tombstonesPulledForMostNotesAreHeldUntilConfirmed() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        for index in 0..<20 { try a.store.createNote(in: .root, title: "n\(index)", body: Data("x\n".utf8)) }
        try await world.syncToQuiet([a, b])
        #expect(await b.engine.sync().succeeded)  // b's clean-sync yardstick sees 20 notes
        try a.store.allowMassDelete(true)
        for index in 0..<15 { try a.store.removeFile(in: .root, name: "n\(index)") }
        #expect(await a.engine.sync().succeeded)
        let held = await b.engine.sync()
        guard case .held = held else { Issue.record("expected a hold, got \(held)"); return }
        #expect(try b.store.status().noteCount == 20)
        #expect(try b.store.status().sync.lastError?.contains("--allow-mass-delete") == true)
        try b.store.allowMassDelete(true)
        #expect(await b.engine.sync().succeeded)
        #expect(try b.store.status().noteCount == 5)
    }
}
