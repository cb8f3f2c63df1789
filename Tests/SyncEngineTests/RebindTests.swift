import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncServer
import TestSupport
import Testing

/// `NotesStore.rebindServer`: a profile moves to another server or account
/// with every id and text, and meets the notes the new server already has
/// without doubling them.
@Suite struct RebindTests {
    func text(_ store: NotesStore, _ name: String) throws -> String? {
        guard let entry = try store.lookup(in: .root, name: name) else { return nil }
        return String(decoding: try store.contents(of: entry.ref), as: UTF8.self)
    }

    /// `device`'s store with an engine talking to `world`'s server.
    func attach(_ device: SyncWorld.Device, to world: SyncWorld) throws -> SyncWorld.Device {
        let transport = InProcessTransport(server: world.server, token: world.token)
        return SyncWorld.Device(
            store: device.store, transport: transport,
            engine: try SyncEngine(replica: device.store.replica, transport: transport))
    }

    @Test func aRebindKeepsEveryIdQueuesEverythingAsCreatesAndForgetsTheOldServer() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a")
        let note = try a.store.createNote(in: .root, title: "n.md", body: Data("n\n".utf8))
        _ = try a.store.makeDirectory(in: .root, name: "Folder")
        let gone = try a.store.createNote(in: .root, title: "gone.md", body: Data("g\n".utf8))
        try await world.syncToQuiet([a])
        try a.store.removeFile(in: .root, name: "gone.md")
        try a.store.bindServer(url: "http://old")
        #expect(try a.store.accountBinding().account != nil, "the sync named the account")

        let report = try a.store.rebindServer(url: "http://new", tokenID: "new")
        #expect(report == { var r = RebindReport(); r.notes = 1; r.folders = 1; return r }())
        let state = try a.store.syncState()
        #expect(state.serverURL == "http://new" && state.accountID == nil && state.cursor == nil)
        #expect(try a.store.accountBinding() == AccountBinding(account: nil, tokenID: "new"))
        #expect(try a.store.knownServerVersions().isEmpty)
        let queued = try a.store.freezeBatch(maxCount: 100, maxBytes: 1 << 20)
        #expect(queued.count == 2)
        #expect(queued.allSatisfy { $0.baseVersion == nil && !$0.isDelete })
        #expect(Set(queued.map(\.ref)).contains(.note(note)))
        #expect(!queued.map(\.ref).contains(.note(gone)), "a local tombstone has nothing to tell")
        // The new token's first answer names the account; another token of
        // another account is refused after that.
        try a.store.confirmAccount(serverAccount: "account:k2", tokenID: "new")
        try a.store.confirmAccount(serverAccount: "account:k2", tokenID: "second-of-k2")
        #expect(throws: StoreError.self) { try a.store.confirmAccount(serverAccount: "account:k1", tokenID: "old") }
    }

    @Test func rebindingToAServerThatHoldsSomeOfTheSameNotesMergesThemWithoutDuplicates() async throws {
        let first = try await SyncWorld()
        defer { first.remove() }
        let a = try first.device("a"), b = try first.device("b")
        let shared = try a.store.createNote(in: .root, title: "shared.md", body: Data("one\ntwo\n".utf8))
        let onlyA = try a.store.createNote(in: .root, title: "a.md", body: Data("a\n".utf8))
        try await first.syncToQuiet([a, b])
        // b moves first: the second server gets shared.md with b's edit.
        try b.store.replaceBody(of: shared, with: Data("one\ntwo\nfrom b\n".utf8))
        let second = try await SyncWorld()
        defer { second.remove() }
        try b.store.rebindServer(url: "http://second", tokenID: nil)
        let b2 = try attach(b, to: second)
        #expect(await b2.engine.sync().succeeded)
        // a adds to its own note offline, then moves too. The second server's
        // rows share no known ancestor with a's (bases are forgotten on a
        // rebind), so a side holding every line of the other wins.
        try a.store.replaceBody(of: onlyA, with: Data("a\nmore\n".utf8))
        try a.store.rebindServer(url: "http://second", tokenID: nil)
        let a2 = try attach(a, to: second)
        try await second.syncToQuiet([a2, b2])

        let viewer = try second.device("viewer")
        #expect(await viewer.engine.sync().succeeded)
        #expect(try viewer.store.status().noteCount == 2, "no duplicate, no conflict copy")
        #expect(try text(viewer.store, "shared.md") == "one\ntwo\nfrom b\n")
        #expect(try text(viewer.store, "a.md") == "a\nmore\n")
        #expect(try viewer.store.lookup(in: .root, name: "shared.md")?.ref == .note(shared))
        #expect(try viewer.store.lookup(in: .root, name: "a.md")?.ref == .note(onlyA))
        for device in [a2, b2] {
            #expect(try device.store.status().noteCount == 2)
            #expect(try text(device.store, "shared.md") == "one\ntwo\nfrom b\n")
            #expect(try text(device.store, "a.md") == "a\nmore\n")
        }
    }

    @Test func deletionsHeldFromTheOldServerNeverRemoveNotesAfterARebind() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        for index in 0..<10 {
            try a.store.createNote(in: .root, title: "n\(index).md", body: Data("n\(index)\n".utf8))
        }
        try await world.syncToQuiet([a, b])
        for index in 0..<10 { try a.store.removeFile(in: .root, name: "n\(index).md") }
        _ = try a.store.confirmMassDelete()
        _ = await a.engine.sync()
        _ = await b.engine.sync()
        #expect(try b.store.list(directory: .root, afterCookie: 0, limit: 100).count == 10, "b holds the deletions")

        // b moves to a fresh server and sends it every note, then the held
        // deletions are confirmed: they came from the old server.
        let fresh = try await SyncWorld()
        defer { fresh.remove() }
        _ = try b.store.rebindServer(url: "http://new", tokenID: nil)
        let moved = try attach(b, to: fresh)
        // The guard still holds (its window spans the move); the notes go out.
        _ = await moved.engine.sync()
        #expect(try b.store.status().pendingCount == 0)
        _ = try b.store.confirmMassDelete()
        _ = await moved.engine.sync()
        #expect(try b.store.list(directory: .root, afterCookie: 0, limit: 100).count == 10,
                "a deletion pulled from the old server removes nothing once the profile moved")
    }
}
