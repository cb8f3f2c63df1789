import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncProtocol
import SyncServer
import SyncServerSQLite
import TestSupport
import Testing

@Suite struct ResyncTests {
    func text(_ store: NotesStore, _ name: String) throws -> String? {
        guard let entry = try store.lookup(in: .root, name: name) else { return nil }
        return String(decoding: try store.contents(of: entry.ref), as: UTF8.self)
    }

    @Test func anExpiredCursorResyncsKeepingANoteWhoseTombstoneExpiredAndDeletingOneWhoseTombstoneRemains() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        try a.store.createNote(in: .root, title: "expired.md", body: Data("x\n".utf8))
        try a.store.createNote(in: .root, title: "gone.md", body: Data("y\n".utf8))
        let kept = try a.store.createNote(in: .root, title: "kept.md", body: Data("v1\n".utf8))
        try await world.syncToQuiet([a, b])
        // b goes offline; a deletes two notes and the server forgets only the first tombstone.
        try a.store.removeFile(in: .root, name: "expired.md")
        #expect(await a.engine.sync().succeeded)
        try await Task.sleep(for: .milliseconds(20))
        let between = Date()
        try await Task.sleep(for: .milliseconds(20))
        try a.store.removeFile(in: .root, name: "gone.md")
        #expect(await a.engine.sync().succeeded)
        try b.store.replaceBody(of: kept, with: Data("v1\nb offline\n".utf8))
        _ = try await world.server.store.purge(before: between)
        let outcome = await b.engine.sync()
        #expect(outcome.succeeded)
        // Only the server's tombstone deletes; the note whose tombstone expired
        // is kept and sent back (a returning note beats a lost one).
        #expect(try text(b.store, "gone.md") == nil)
        #expect(try text(b.store, "expired.md") == "x\n")
        #expect(try text(b.store, "kept.md") == "v1\nb offline\n")
        try await world.syncToQuiet([a, b])
        #expect(try text(a.store, "kept.md") == "v1\nb offline\n")
        #expect(try text(a.store, "expired.md") == "x\n")
        #expect(try text(a.store, "gone.md") == nil)
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
        let (server, devices) = try await restore(world, from: backup, devices: [a, b])
        try await world.syncToQuiet(devices)
        for device in devices {
            #expect(try text(device.store, "old.md") == "old\nedited later\n")
            #expect(try text(device.store, "new.md") == "new\n")
        }
        let fresh = try world.device("c")
        let viewer = SyncWorld.Device(
            store: fresh.store, transport: InProcessTransport(server: server, token: world.token),
            engine: try SyncEngine(
                replica: fresh.store.replica, transport: InProcessTransport(server: server, token: world.token)))
        #expect(await viewer.engine.sync().succeeded)
        #expect(try text(fresh.store, "new.md") == "new\n")
        #expect(try text(fresh.store, "old.md") == "old\nedited later\n")
    }

    /// The server replaced by `backup` with a new epoch, and `devices` re-pointed at it.
    func restore(
        _ world: SyncWorld, from backup: String, devices: [SyncWorld.Device]
    ) async throws -> (SyncServer, [SyncWorld.Device]) {
        let restored = try SQLiteServerStore(path: backup)
        _ = try await restored.newEpoch(now: Date())
        let server = SyncServer(store: restored)
        return (server, try world.devices(devices, movedTo: server))
    }

    @Test func afterARestoreNoPushGoesOutOnLostVersionsAndNothingWrittenOnEitherSideIsLost() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let kept = try a.store.createNote(in: .root, title: "kept.md", body: Data("base\n".utf8))
        try await world.syncToQuiet([a, b])
        let backup = try world.backupServer(to: "backup.sqlite")
        try a.store.replaceBody(of: kept, with: Data("base\nafter backup\n".utf8))
        try a.store.createNote(in: .root, title: "only.md", body: Data("only\n".utf8))
        try await world.syncToQuiet([a, b])

        let (_, devices) = try await restore(world, from: backup, devices: [a, b])
        let (a2, b2) = (devices[0], devices[1])
        // b writes first: its push meets 410 and resyncs; the restored row is
        // older than what b had, so b's text goes back whole.
        try b2.store.replaceBody(of: kept, with: Data("base\nafter backup\nb after restore\n".utf8))
        #expect(await b2.engine.sync().succeeded)
        // a still holds only versions from the lost history: a rename of a note
        // the restored server never had, and a note b wrote to since.
        _ = try a2.store.rename(from: .root, name: "only.md", to: .root, newName: "renamed.md")
        #expect(await a2.engine.sync().succeeded)
        try await world.syncToQuiet(devices)
        for device in devices {
            #expect(try text(device.store, "kept.md") == "base\nafter backup\nb after restore\n")
            #expect(try text(device.store, "renamed.md") == "only\n")
            #expect(try text(device.store, "only.md") == nil)
            #expect(try device.store.status().noteCount == 2, "no conflict copy: every line is in one note")
        }
    }

    @Test func aDeviceThatHasOnlyPushedLearnsTheEpochAndMeetsTheRestore() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), c = try world.device("c")
        try a.store.createNote(in: .root, title: "a.md", body: Data("a\n".utf8))
        try await world.syncToQuiet([a])
        let backup = try world.backupServer(to: "backup.sqlite")
        try c.store.createNote(in: .root, title: "c.md", body: Data("written on c\n".utf8))
        c.transport.queueFaults([.none, .serverError])  // the push lands, the pull fails
        #expect(await c.engine.sync().succeeded == false)
        let epoch = try await world.serverStore.epoch()
        #expect(try c.store.syncState().cursor == SyncCursor(epoch: epoch, counter: 0).rawValue)

        let (_, devices) = try await restore(world, from: backup, devices: [a, c])
        try await world.syncToQuiet(devices)
        for device in devices {
            #expect(try text(device.store, "c.md") == "written on c\n")
            #expect(try text(device.store, "a.md") == "a\n")
        }
    }

    @Test func tombstonesPulledForMostNotesAreHeldUntilConfirmed() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        for index in 0..<20 { try a.store.createNote(in: .root, title: "n\(index)", body: Data("x\n".utf8)) }
        try await world.syncToQuiet([a, b])
        #expect(await b.engine.sync().succeeded)  // b's clean-sync yardstick sees 20 notes
        for index in 0..<15 { try a.store.removeFile(in: .root, name: "n\(index)") }
        try a.store.confirmMassDelete()
        #expect(await a.engine.sync().succeeded)
        let held = await b.engine.sync()
        guard case .held = held else { Issue.record("expected a hold, got \(held)"); return }
        #expect(try b.store.status().noteCount == 20)
        #expect(try b.store.status().massDeleteHold.description.contains("--allow-mass-delete"))
        try b.store.confirmMassDelete()
        #expect(await b.engine.sync().succeeded)
        #expect(try b.store.status().noteCount == 5)
    }
}
