import Foundation
import FuseKit
import NotesModel
@testable import NotesFS
@testable import NotesStore
import TestSupport
import Testing

/// A store and the in-process kernel in front of its file system.
struct InProcessWorld {
    let fixture: StoreFixture
    let kernel: InProcessKernel

    init(skipsOpens: Bool = true, configuration: StoreConfiguration = StoreConfiguration()) throws {
        fixture = try StoreFixture(configuration: configuration)
        kernel = try InProcessKernel(
            tree: fixture.store.tree, logDirectory: fixture.directory.path, skipsOpens: skipsOpens)
    }

    var store: NotesStore { fixture.store }

    func snapshot() throws -> StoreSnapshot { try StoreSnapshot.read(fixture.databasePath, store: fixture.store) }

    /// Closes the kernel (forgetting every inode) and removes the store.
    func close() {
        kernel.close()
        fixture.remove()
    }
}

/// One way editors and tools save a note, as the system calls they make.
struct InProcessSave: Sendable, CustomTestStringConvertible {
    var name: String
    var steps: @Sendable (InProcessKernel) throws -> Void
    /// Live notes afterwards: path → text.
    var expected: [String: String]
    /// The path whose note must keep the seeded id of `/note.md`.
    var keepsID: String?
    var deletes = false

    var testDescription: String { name }
}

// `original` and `other`, the seeded texts, are SavePatternTests'.

let inProcessSaves: [InProcessSave] = [
    InProcessSave(
        name: "echo >", steps: { try $0.writeFile("note.md", "hi\n") },
        expected: ["/note.md": "hi\n", "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "echo >>",
        steps: { kernel in
            let descriptor = try kernel.open("note.md", O_WRONLY | O_APPEND | O_CREAT)
            try kernel.write(descriptor, "three\n")
            try kernel.close(descriptor)
        },
        expected: ["/note.md": original + "three\n", "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "truncate -s 4", steps: { try $0.setAttributes("note.md", AttributeChanges(size: 4)) },
        expected: ["/note.md": "line", "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "sed -i (a temporary file with a synced name renamed over)",
        steps: { kernel in
            try kernel.writeFile("sedK3jx9Q", "line ONE\nline two\n")
            try kernel.rename("sedK3jx9Q", "note.md")
        },
        expected: ["/note.md": "line ONE\nline two\n", "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "python mkstemp, fsync and os.replace",
        steps: { kernel in
            let descriptor = try kernel.open("tmpq8w_2z1", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            try kernel.write(descriptor, "new\n")
            try kernel.fsync(descriptor)
            try kernel.close(descriptor)
            try kernel.rename("tmpq8w_2z1", "note.md")
        },
        expected: ["/note.md": "new\n", "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "rsync (a hidden temporary file, its mtime set, renamed over)",
        steps: { kernel in
            try kernel.writeFile(".note.md.Xa81Qz", "synced\n")
            try kernel.utime(".note.md.Xa81Qz", nanoseconds: 1_500_000_000_000_000_000)
            try kernel.rename(".note.md.Xa81Qz", "note.md")
        },
        expected: ["/note.md": "synced\n", "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "mv within a folder", steps: { try $0.rename("note.md", "renamed.md") },
        expected: ["/renamed.md": original, "/dir/other.md": other], keepsID: "/renamed.md"),
    InProcessSave(
        name: "mv across folders",
        steps: { kernel in
            try kernel.rename("note.md", "dir/note.md")
            try kernel.mkdir("new")
            try kernel.mkdir("new/deep")
            try kernel.rename("dir/note.md", "new/deep/note.md")
        },
        expected: ["/new/deep/note.md": original, "/dir/other.md": other], keepsID: "/new/deep/note.md"),
    InProcessSave(
        name: "rm", steps: { try $0.unlink("note.md") }, expected: ["/dir/other.md": other], deletes: true),
    InProcessSave(
        name: "mv into a hidden directory and back",
        steps: { kernel in
            try kernel.mkdir(".hidden")
            try kernel.rename("note.md", ".hidden/note.md")
            guard try !kernel.exists("note.md") else { throw FileSystemError.exists }
            try kernel.rename(".hidden/note.md", "note.md")
        },
        expected: ["/note.md": original, "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "cp --remove-destination (unlink, create)",
        steps: { kernel in
            try kernel.unlink("note.md")
            try kernel.writeFile("note.md", "replaced\n")
        },
        expected: ["/note.md": "replaced\n", "/dir/other.md": other], keepsID: "/note.md"),
    InProcessSave(
        name: "vim (swap file, rename to backup, write new, delete backup)",
        steps: { kernel in
            try kernel.writeFile(".note.md.swp", "swap")
            try kernel.rename("note.md", "note.md~")
            try kernel.writeFile("note.md", "rewritten\n")
            try kernel.unlink("note.md~")
            try kernel.unlink(".note.md.swp")
        },
        expected: ["/note.md": "rewritten\n", "/dir/other.md": other], keepsID: "/note.md"),
]

/// The file-system rules, through the real file system over a real
/// store, driven the way the kernel drives it (`InProcessKernel`), with no
/// mount: each test takes milliseconds. The real-mount suites check the
/// same rules through the kernel and real tools.
@Suite struct InProcessFileSystemTests {
    func seeded(_ world: InProcessWorld, synced: Bool) throws -> [String: String] {
        let notes = [(folder: [String](), title: "note.md", body: original), (folder: ["dir"], title: "other.md", body: other)]
        return synced ? try Seed.syncedNotes(world.store, notes) : try Seed.unsyncedNotes(world.store, notes)
    }

    @Test(arguments: inProcessSaves, [true, false])
    func eachSaveKeepsTheNotesIDWhetherOrNotItWasEverSynced(_ save: InProcessSave, synced: Bool) throws {
        let world = try InProcessWorld()
        defer { world.close() }
        let seeded = try seeded(world, synced: synced)
        try save.steps(world.kernel)
        if let path = save.keepsID {
            #expect(try world.kernel.getxattr(path, "user.notesfs.id") == seeded["/note.md"], "id through getxattr")
        }
        let snapshot = try world.snapshot()
        #expect(snapshot.notes.mapValues { String(decoding: $0, as: UTF8.self) } == save.expected)
        if let path = save.keepsID { #expect(snapshot.ids[path] == seeded["/note.md"]) }
        let noteRows = snapshot.outbox.filter { $0.kind == "note" }
        if synced && save.deletes {
            #expect(noteRows.map(\.op) == ["delete"])
        } else {
            #expect(!snapshot.outbox.contains { $0.op == "delete" }, "no tombstone: \(snapshot.outbox)")
            #expect(noteRows.allSatisfy { Set(seeded.values).contains($0.id) }, "no new note: \(snapshot.outbox)")
            #expect(Set(noteRows.map(\.id)).count == noteRows.count, "one change per note: \(snapshot.outbox)")
        }
        #expect(!world.kernel.logText.contains("more often than it looked it up"), "\(world.kernel.logText)")
    }

    @Test func aFoldersMtimeAndCtimeMoveWhenAnEntryIsCreatedRemovedOrRenamedInIt() throws {
        let world = try InProcessWorld()
        defer { world.close() }
        _ = try Seed.syncedNotes(
            world.store, [(folder: ["Work"], title: "plan.md", body: "text\n"), (folder: ["Other"], title: "x.md", body: "x\n")])
        let kernel = world.kernel
        try kernel.mkdir(".stash")
        let old: Int64 = 1_000_000_000_000_000_000
        let directories = ["", "Work", "Other", ".stash"]
        func check(_ action: String, changed: Set<String>, _ body: () throws -> Void) throws {
            for path in directories { try kernel.utime(path, nanoseconds: old) }
            var ctimes: [String: Int64] = [:]
            for path in directories { ctimes[path] = try kernel.stat(path).changeTimeNanoseconds }
            let started = NotesFileSystem.nowNanoseconds()
            try body()
            for path in directories {
                let attributes = try kernel.stat(path)
                if changed.contains(path) {
                    #expect(attributes.modificationTimeNanoseconds >= started, "\(action): \(path)'s mtime")
                    #expect(attributes.changeTimeNanoseconds >= started, "\(action): \(path)'s ctime")
                } else {
                    #expect(attributes.modificationTimeNanoseconds == old, "\(action): \(path)'s mtime moved")
                    #expect(attributes.changeTimeNanoseconds == ctimes[path], "\(action): \(path)'s ctime moved")
                }
            }
        }
        try check("create", changed: ["Work"]) { try kernel.writeFile("Work/new.md", "x") }
        try check("unlink", changed: ["Work"]) { try kernel.unlink("Work/new.md") }
        try check("move", changed: ["Work", "Other"]) { try kernel.rename("Work/plan.md", "Other/plan.md") }
        try check("rename", changed: ["Other"]) { try kernel.rename("Other/plan.md", "Other/renamed.md") }
        try check("mkdir", changed: ["Other"]) { try kernel.mkdir("Other/sub") }
        try check("rmdir", changed: ["Other"]) { try kernel.rmdir("Other/sub") }
        try check("create in the root", changed: [""]) { try kernel.writeFile("root.md", "") }
        try check("local-only create", changed: [".stash"]) { try kernel.writeFile(".stash/scratch", "") }
        try check("across the line", changed: [".stash", "Work"]) { try kernel.rename(".stash/scratch", "Work/kept.md") }
        // The renamed file's own ctime moved; its mtime did not.
        try kernel.utime("Work/kept.md", nanoseconds: old)
        let started = NotesFileSystem.nowNanoseconds()
        try kernel.rename("Work/kept.md", "Work/moved.md")
        let moved = try kernel.stat("Work/moved.md")
        #expect(moved.modificationTimeNanoseconds == old && moved.changeTimeNanoseconds >= started)
        // The folders' new times are this machine's own: no folder change was queued.
        #expect(!(try world.snapshot().outbox.contains { $0.kind == "folder" }))
    }

    @Test(arguments: [true, false])
    func anUnlinkedOrReplacedFileStillOpenHasNoLinksAndKeepsItsBytes(skipsOpens: Bool) throws {
        let world = try InProcessWorld(skipsOpens: skipsOpens)
        defer { world.close() }
        let kernel = world.kernel
        try kernel.writeFile("note.md", "text\n")
        try kernel.writeFile("other.md", "x\n")
        var descriptor = try kernel.open("note.md", O_RDWR)
        #expect(try kernel.fstat(descriptor).linkCount == 1)
        try kernel.unlink("note.md")
        #expect(try kernel.fstat(descriptor).linkCount == 0)
        #expect(try kernel.readAll(descriptor) == "text\n")
        try kernel.pwrite(descriptor, Data("zzz".utf8), at: 0)
        try kernel.close(descriptor)
        #expect(try !kernel.exists("note.md"), "the note came back")
        descriptor = try kernel.open("other.md", O_RDONLY)
        try kernel.writeFile("new.md", "y\n")
        try kernel.rename("new.md", "other.md")
        #expect(try kernel.fstat(descriptor).linkCount == 0)
        #expect(try kernel.readAll(descriptor) == "x\n", "the replaced file's bytes")
        #expect(try kernel.stat("other.md").linkCount == 1)
        try kernel.close(descriptor)
        #expect(try kernel.readFile("other.md") == "y\n")
        #expect(try world.snapshot().notes.mapValues { String(decoding: $0, as: UTF8.self) } == ["/other.md": "y\n"])
    }

    @Test func chownToAnotherOwnerFailsAndOneThatChangesNothingSucceeds() throws {
        let world = try InProcessWorld()
        defer { world.close() }
        let kernel = world.kernel
        try kernel.writeFile("note.md", "text\n")
        try kernel.mkdir("Work")
        let (uid, gid) = (getuid(), getgid())
        for path in ["note.md", "Work"] {
            for (newUID, newGID) in [(uid + 1, nil), (nil, gid + 1), (uid + 1, gid + 1)] as [(UInt32?, UInt32?)] {
                #expect(throws: FileSystemError.notPermitted) { try kernel.chown(path, uid: newUID, gid: newGID) }
                let attributes = try kernel.stat(path)
                #expect(attributes.uid == uid && attributes.gid == gid)
            }
            let started = NotesFileSystem.nowNanoseconds()
            try kernel.chown(path, uid: uid, gid: gid)
            try kernel.chown(path, uid: nil, gid: nil)
            #expect(try kernel.stat(path).changeTimeNanoseconds >= started, "\(path): a chown moves the ctime")
        }
    }

    @Test func aWritePastTheNoteSizeCapFailsWithEFBIGAndChangesNothing() throws {
        var configuration = StoreConfiguration()
        configuration.noteSizeLimitBytes = 64 << 10
        let world = try InProcessWorld(configuration: configuration)
        defer { world.close() }
        let kernel = world.kernel
        try kernel.writeFile("note.md", "abc\n")
        let descriptor = try kernel.open("note.md", O_WRONLY)
        defer { try? kernel.close(descriptor) }
        let cap = Int64(configuration.noteSizeLimitBytes)
        #expect(throws: FileSystemError(EFBIG)) { try kernel.pwrite(descriptor, Data("x".utf8), at: cap) }
        try kernel.pwrite(descriptor, Data("x".utf8), at: cap - 1)
        #expect(try kernel.stat("note.md").size == UInt64(cap))
        #expect(throws: FileSystemError(EFBIG)) { try kernel.pwrite(descriptor, Data("yy".utf8), at: cap - 1) }
        #expect(try kernel.stat("note.md").size == UInt64(cap), "nothing of the refused write was kept")
    }
}
