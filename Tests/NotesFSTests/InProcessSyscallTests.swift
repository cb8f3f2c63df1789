import Foundation
import FuseKit
@testable import NotesStore
import TestSupport
import Testing

/// One system call in a tree holding `note.md` = "abc\n" and the folders
/// `dir/sub`, and the errno it must fail with (0: it succeeds).
struct InProcessCall: Sendable, CustomTestStringConvertible {
    var name: String
    var call: @Sendable (InProcessKernel) throws -> Void
    var expected: Int32
    var testDescription: String { name }
}

let inProcessCalls: [InProcessCall] = [
    InProcessCall(name: "lookup of a missing name", call: { _ = try $0.stat("missing.md") }, expected: ENOENT),
    InProcessCall(name: "rmdir of a non-empty folder", call: { try $0.rmdir("dir") }, expected: ENOTEMPTY),
    InProcessCall(name: "mkdir over an existing folder", call: { try $0.mkdir("dir") }, expected: EEXIST),
    InProcessCall(name: "mkdir over an existing file", call: { try $0.mkdir("note.md") }, expected: EEXIST),
    InProcessCall(name: "rename of a folder into its own child", call: { try $0.rename("dir", "dir/sub/dir") }, expected: EINVAL),
    InProcessCall(
        name: "O_EXCL create of an existing name", call: { _ = try $0.open("note.md", O_CREAT | O_EXCL | O_WRONLY) },
        expected: EEXIST),
    InProcessCall(
        name: "a name longer than 255 bytes", call: { try $0.writeFile(String(repeating: "x", count: 256), "y") },
        expected: ENAMETOOLONG),
    InProcessCall(
        name: "a name of exactly 255 bytes", call: { try $0.writeFile(String(repeating: "x", count: 252) + ".md", "y") },
        expected: 0),
    InProcessCall(name: "a hard link", call: { try $0.link("note.md", "hard.md") }, expected: EPERM),
    InProcessCall(name: "a FIFO", call: { try $0.mknod("fifo", mode: S_IFIFO | 0o644) }, expected: EPERM),
    InProcessCall(name: "a symlink with a synced name", call: { try $0.symlink("note.md", "link.md") }, expected: EPERM),
    InProcessCall(
        name: "a symlink with a local-only name",
        call: { kernel in
            try kernel.symlink("note.md", ".#lock")
            guard try kernel.readlink(".#lock") == "note.md" else { throw FileSystemError.io }
        },
        expected: 0),
    InProcessCall(
        name: "rename with RENAME_NOREPLACE over a file",
        call: { kernel in
            try kernel.writeFile("b.md", "b")
            try kernel.rename("b.md", "note.md", flags: RenameFlags.noReplace)
        },
        expected: EEXIST),
    InProcessCall(
        name: "rename with RENAME_EXCHANGE is refused",
        call: { kernel in
            try kernel.writeFile("b.md", "b")
            try kernel.rename("b.md", "note.md", flags: RenameFlags.exchange)
        },
        expected: EINVAL),
    InProcessCall(
        name: "renaming a folder to a hidden name crosses the local-only line", call: { try $0.rename("dir", ".archive") },
        expected: EXDEV),
    InProcessCall(name: "a missing user xattr", call: { _ = try $0.getxattr("note.md", "user.other") }, expected: ENODATA),
    InProcessCall(
        name: "security xattrs are not supported", call: { _ = try $0.getxattr("note.md", "security.selinux") },
        expected: EOPNOTSUPP),
    InProcessCall(
        name: "setting user.notesfs.id succeeds and changes nothing",
        call: { kernel in
            let before = try kernel.getxattr("note.md", "user.notesfs.id")
            try kernel.setxattr("note.md", "user.notesfs.id", "x")
            guard try kernel.getxattr("note.md", "user.notesfs.id") == before,
                try kernel.getxattr("note.md", "user.notesfs.state") == "pending"
            else { throw FileSystemError.io }
        },
        expected: 0),
    InProcessCall(name: "setting another xattr", call: { try $0.setxattr("note.md", "user.other", "x") }, expected: EOPNOTSUPP),
    // The control directory: reachable by name, never writable.
    InProcessCall(name: "writing .notesfs/status", call: { try $0.writeFile(".notesfs/status", "x") }, expected: EACCES),
    InProcessCall(name: "creating a file in .notesfs", call: { try $0.writeFile(".notesfs/mine", "x") }, expected: EPERM),
    InProcessCall(name: "removing .notesfs/status", call: { try $0.unlink(".notesfs/status") }, expected: EPERM),
    InProcessCall(name: "mkdir .notesfs", call: { try $0.mkdir(".notesfs") }, expected: EEXIST),
    InProcessCall(name: "rmdir .notesfs/history", call: { try $0.rmdir(".notesfs/history") }, expected: EPERM),
    InProcessCall(name: "moving a note into .notesfs", call: { try $0.rename("note.md", ".notesfs/note.md") }, expected: EPERM),
    InProcessCall(name: "moving .notesfs/status out", call: { try $0.rename(".notesfs/status", "status") }, expected: EPERM),
    InProcessCall(
        name: "chmod of .notesfs/status", call: { try $0.setAttributes(".notesfs/status", AttributeChanges(permissions: 0o600)) },
        expected: EPERM),
    InProcessCall(name: "mkdir in .notesfs/at", call: { try $0.mkdir(".notesfs/at/mine") }, expected: EROFS),
    InProcessCall(
        name: "reading .notesfs/status",
        call: { kernel in
            guard try !kernel.readFile(".notesfs/status").isEmpty else { throw FileSystemError.io }
        },
        expected: 0),
]

/// The errno of each call, and what the kernel sees of local-only names and
/// the control directory, through the in-process kernel (no mount).
@Suite struct InProcessSyscallTests {
    @Test(arguments: inProcessCalls, [true, false])
    func eachCallGivesThePosixResult(_ call: InProcessCall, skipsOpens: Bool) throws {
        let world = try InProcessWorld(skipsOpens: skipsOpens)
        defer { world.close() }
        try world.kernel.writeFile("note.md", "abc\n")
        try world.kernel.mkdir("dir")
        try world.kernel.mkdir("dir/sub")
        var result: Int32 = 0
        do {
            try call.call(world.kernel)
        } catch let error as FileSystemError {
            result = error.errno
        }
        #expect(result == call.expected, "\(String(cString: strerror(result))), not \(String(cString: strerror(call.expected)))")
        #expect(!world.kernel.logText.contains("more often than it looked it up"), "\(world.kernel.logText)")
    }

    @Test func localOnlyNamesAreKeptHereAndNeverQueued() throws {
        let world = try InProcessWorld()
        defer { world.close() }
        let kernel = world.kernel
        let names = [".note.md.swp", "note.md~", "~lock.md", "4913", "#draft#", "part.part", "x.tmp", "Thumbs.db"]
        for name in names { try kernel.writeFile(name, "scratch\n") }
        try kernel.mkdir(".git")
        try kernel.mkdir(".git/objects")
        try kernel.writeFile(".git/objects/ab", "blob")
        for name in names + [".git/objects/ab"] {
            #expect(try kernel.getxattr(name, "user.notesfs.state") == "local", "\(name)")
            #expect(try kernel.readFile(name) == (name.hasPrefix(".git") ? "blob" : "scratch\n"))
        }
        let snapshot = try world.snapshot()
        #expect(snapshot.outbox.isEmpty, "\(snapshot.outbox)")
        #expect(snapshot.notes.isEmpty)
        #expect(Set(try kernel.list("").keys) == Set(names + [".git"]), "listed, though never synced")
    }

    @Test func aSyncedNoteRenamedToALocalOnlyNameIsTombstonedAndComesBackWithItsID() throws {
        let world = try InProcessWorld()
        defer { world.close() }
        let ids = try Seed.syncedNotes(world.store, [(folder: [], title: "n.md", body: "text\n")])
        let kernel = world.kernel
        try kernel.rename("n.md", "n.md~")
        #expect(try kernel.getxattr("n.md~", "user.notesfs.state") == "local")
        #expect(try world.snapshot().outbox.map(\.op) == ["delete"])
        try kernel.rename("n.md~", "n.md")
        #expect(try kernel.getxattr("n.md", "user.notesfs.id") == ids["/n.md"])
        #expect(try kernel.readFile("n.md") == "text\n")
        #expect(!(try world.snapshot().outbox.contains { $0.op == "delete" }), "the revival cancels the tombstone")
    }

    @Test func theControlDirectoryIsFoundByNameButNeverListed() throws {
        let world = try InProcessWorld()
        defer { world.close() }
        let kernel = world.kernel
        try kernel.writeFile("note.md", "abc\n")
        #expect(try kernel.list("").keys.sorted() == ["note.md"])
        #expect(try kernel.stat(".notesfs").kind == .directory)
        #expect(try kernel.stat(".notesfs").linkCount == 5)
        #expect(Set(try kernel.list(".notesfs").keys) == ["status", "status.json", "pending", "conflicts", "history", "trash", "at"])
        #expect(try kernel.readFile(".notesfs/pending") == "/note.md\n")
    }

    @Test(arguments: [1, 2, 5, 64])
    func aListingReadInPagesOfAnySizeHasEveryNameOnceAndEveryLookupIsForgotten(pageEntries: Int) throws {
        let world = try InProcessWorld()
        defer { world.close() }
        let kernel = world.kernel
        kernel.listingPageEntries = pageEntries
        let names = (0..<23).map { "note \($0).md" }
        for name in names { try kernel.writeFile(name, name) }
        try kernel.mkdir("Work")
        try kernel.unlink("note 7.md")
        let listed = try kernel.list("")
        #expect(Set(listed.keys) == Set(names.filter { $0 != "note 7.md" } + ["Work"]))
        #expect(listed["note 3.md"]?.size == UInt64("note 3.md".utf8.count))
        #expect(listed["Work"]?.kind == .directory)
        #expect(try kernel.stat("").linkCount == 3, "the root counts Work")
        #expect(kernel.lookups.isEmpty, "every inode handed out was forgotten: \(kernel.lookups)")
        #expect(!kernel.logText.contains("more often than it looked it up"), "\(kernel.logText)")
    }
}
