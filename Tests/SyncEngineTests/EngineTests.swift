import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncProtocol
import TestSupport
import Testing

@Suite struct EngineTests {
    func body(_ store: NotesStore, _ name: String, in directory: DirectoryRef = .root) throws -> String? {
        guard let entry = try store.lookup(in: directory, name: name) else { return nil }
        return String(decoding: try store.contents(of: entry.ref), as: UTF8.self)
    }

    @Test func aNoteMadeOnOneDeviceAppearsOnTheOther() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let work = try a.store.makeFolders(path: ["Work"])
        try a.store.createNote(in: work, title: "plan.md", body: Data("step one\n".utf8))
        try await world.syncToQuiet([a, b])
        let shown = try #require(try b.store.lookup(in: .root, name: "Work")?.ref.directory)
        #expect(try body(b.store, "plan.md", in: shown) == "step one\n")
        // Rename, move and delete travel too.
        _ = try b.store.rename(from: shown, name: "plan.md", to: .root, newName: "done.md")
        try await world.syncToQuiet([a, b])
        #expect(try body(a.store, "done.md") == "step one\n")
        try a.store.removeFile(in: .root, name: "done.md")
        try await world.syncToQuiet([a, b])
        #expect(try b.store.lookup(in: .root, name: "done.md") == nil)
    }

    @Test func editsToDifferentLinesOnTwoOfflineDevicesMerge() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let id = try a.store.createNote(in: .root, title: "n.md", body: Data("one\ntwo\nthree\nfour\n".utf8))
        try await world.syncToQuiet([a, b])
        try a.store.replaceBody(of: id, with: Data("ONE\ntwo\nthree\nfour\n".utf8))
        try b.store.replaceBody(of: id, with: Data("one\ntwo\nthree\nFOUR\n".utf8))
        try await world.syncToQuiet([a, b])
        #expect(try body(a.store, "n.md") == "ONE\ntwo\nthree\nFOUR\n")
        #expect(try a.store.status().conflictCopies.isEmpty)
    }

    @Test func editsToTheSameLineMakeExactlyOneConflictCopyEverywhere() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b"), c = try world.device("c")
        let id = try a.store.createNote(in: .root, title: "n.md", body: Data("line\n".utf8))
        try await world.syncToQuiet([a, b, c])
        try a.store.replaceBody(of: id, with: Data("from a\n".utf8))
        try b.store.replaceBody(of: id, with: Data("from b\n".utf8))
        try await world.syncToQuiet([a, b, c])
        for device in [a, b, c] {
            #expect(try device.store.status().conflictCopies.count == 1)
            #expect(try device.store.status().noteCount == 2)
        }
        let texts = Set(try a.store.list(directory: .root).map {
            String(decoding: try a.store.contents(of: $0.ref), as: UTF8.self)
        })
        #expect(texts == ["from a\n", "from b\n"])
    }

    @Test func anEditBeatsADeleteOnTheOtherDevice() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let id = try a.store.createNote(in: .root, title: "n.md", body: Data("v1\n".utf8))
        try await world.syncToQuiet([a, b])
        try a.store.replaceBody(of: id, with: Data("v2 kept\n".utf8))
        try b.store.removeFile(in: .root, name: "n.md")
        try await world.syncToQuiet([b, a])
        #expect(try body(a.store, "n.md") == "v2 kept\n")
        #expect(try body(b.store, "n.md") == "v2 kept\n")
    }

    @Test func aNoteAddedToAFolderDeletedElsewhereEndsInTheRoot() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let folder = try a.store.makeFolders(path: ["Old"])
        try await world.syncToQuiet([a, b])
        try a.store.removeDirectory(in: .root, name: "Old")
        let bFolder = try #require(try b.store.lookup(in: .root, name: "Old")?.ref.directory)
        try b.store.createNote(in: bFolder, title: "new.md", body: Data("keep me\n".utf8))
        _ = folder
        try await world.syncToQuiet([a, b])
        #expect(try body(a.store, "new.md") == "keep me\n")
        #expect(try body(b.store, "new.md") == "keep me\n")
    }

    @Test(arguments: [Fault.loseRequest, .loseReply, .duplicate, .serverError, .malformedReply])
    func aFaultyNetworkNeverAppliesAChangeTwiceOrLosesIt(fault: Fault) async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let id = try a.store.createNote(in: .root, title: "n.md", body: Data("v1\n".utf8))
        a.transport.queueFaults([fault])
        let first = await a.engine.sync()
        if fault != .none && fault != .duplicate { #expect(!first.succeeded) }
        try a.store.replaceBody(of: id, with: Data("v1\nv2\n".utf8))
        try await world.syncToQuiet([a, b])
        #expect(try body(b.store, "n.md") == "v1\nv2\n")
        #expect(try b.store.status().noteCount == 1)
        #expect(try a.store.status().conflictCopies.isEmpty)
    }

    @Test func textTypedWhileAChangeIsInFlightSurvivesAConflict() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let id = try a.store.createNote(in: .root, title: "n.md", body: Data("base\n".utf8))
        try await world.syncToQuiet([a, b])
        try b.store.replaceBody(of: id, with: Data("base\nfrom b\n".utf8))
        #expect(await b.engine.sync().succeeded)
        try a.store.replaceBody(of: id, with: Data("from a\nbase\n".utf8))
        a.transport.queueFaults([.loseReply])  // a's edit is frozen and reaches nobody's answer
        _ = await a.engine.sync()
        try a.store.replaceBody(of: id, with: Data("from a\nbase\ntyped after the freeze\n".utf8))
        try await world.syncToQuiet([a, b])
        let merged = try #require(try body(a.store, "n.md"))
        let copies = try a.store.status().conflictCopies
        let everything = merged + (try copies.compactMap { path in
            try body(a.store, String(path.dropFirst()))
        }.joined())
        for line in ["from a", "from b", "typed after the freeze"] { #expect(everything.contains(line)) }
    }

    @Test func aRefusedNoteIsKeptLocallyAndTheDevicesStillConverge() async throws {
        var limits = ProtocolLimits.standard
        limits.noteBytesMax = 1_000
        let world = try await SyncWorld(configuration: .init(limits: limits))
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        try a.store.createNote(in: .root, title: "big.md", body: Data(repeating: 65, count: 5_000))
        try a.store.createNote(in: .root, title: "small.md", body: Data("fine\n".utf8))
        try await world.syncToQuiet([a, b])
        #expect(try body(b.store, "small.md") == "fine\n")
        #expect(try a.store.lookup(in: .root, name: "big (not synced).md") != nil)
        #expect(try a.store.status().refusals.count == 1)
    }
}
