import Foundation
import FuseKit
import NotesFS
import NotesModel
@testable import NotesStore
import TestSupport
import Testing

/// The mount's request handling driven without a kernel (`UnmountedFileSystem`,
/// what the simulation's kernel talks to): the invalidations it queues, and
/// truncations judged by the view of the handle they come through.
@Suite struct UnmountedFileSystemTests {
    /// A synced note `n` holding `body`.
    func syncedNote(_ store: NotesStore, _ body: String) throws -> NoteID {
        let id = try store.createNote(in: .root, title: "n", body: Data(utf8: body))
        for change in try store.freezeBatch() { try store.settle(change.changeID, outcome: .applied(version: 1)) }
        return id
    }

    func pull(_ store: NotesStore, _ id: NoteID, _ body: String, version: Int64 = 2) throws {
        try store.applyPulled(
            [RemoteEntity(.note(id), version: version, deleted: false,
                          note: NoteContent(title: "n", body: Data(utf8: body), folderID: nil))],
            cursor: "c\(version)")
    }

    /// Every live note's text in the root.
    func texts(_ store: NotesStore) throws -> [String] {
        try store.list(directory: .root, afterCookie: 0, limit: 10).map {
            String(decoding: try store.contents(of: $0.ref), as: UTF8.self)
        }
    }

    @Test func aPulledChangeQueuesAnInvalidationAndTheKernelsOwnWriteDoesNot() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try syncedNote(fixture.store, "one\n")
        let mount = UnmountedFileSystem(tree: fixture.store.tree)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        _ = mount.takeInvalidations()
        try Data(utf8: "two\n").withUnsafeBytes { bytes in
            _ = try mount.request {
                try $0.write(inode: inode, handle: 0, offset: 4, bytes: bytes, flags: OpenFlags(rawValue: O_WRONLY))
            }
        }
        #expect(mount.takeInvalidations().isEmpty, "the kernel made that change itself")
        for change in try fixture.store.freezeBatch() {
            try fixture.store.settle(change.changeID, outcome: .applied(version: 2))
        }
        try pull(fixture.store, id, "one\ntwo\nthree\n", version: 3)
        #expect(mount.takeInvalidations().contains(.inode(inode)))
    }

    @Test func aTruncationThroughAHandleOpenedBeforeAPullKeepsThePulledTextAfterAnotherProgramsStat() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "one\ntwo\n")
        // Open requests on (NOTESFS_OPEN_REQUESTS=1): each handle is judged by its open.
        let mount = UnmountedFileSystem(tree: store.tree, skipsOpens: false)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        let handle = try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: O_RDWR)) }.handle
        try pull(store, id, "one\ntwo\npulled\n")
        // Another program's stat: the kernel now knows the new size, the
        // program holding the handle still has the text it read before the pull.
        _ = try mount.request { try $0.getAttributes(inode: inode, handle: nil) }
        _ = try mount.request {
            try $0.setAttributes(inode: inode, changes: AttributeChanges(size: 0), handle: handle)
        }
        try Data(utf8: "one\ntwo\nmine\n").withUnsafeBytes { bytes in
            _ = try mount.request {
                try $0.write(inode: inode, handle: handle, offset: 0, bytes: bytes, flags: OpenFlags(rawValue: O_RDWR))
            }
        }
        let shown = try texts(store)
        let all = shown.joined()
        #expect(all.contains("pulled"), "the line the program never saw survives: \(shown)")
        #expect(all.contains("mine"))
    }

    /// One write request of `text` at `offset`.
    func write(_ mount: UnmountedFileSystem, _ inode: UInt64, handle: UInt64, at offset: Int64, _ text: String) throws {
        try Data(utf8: text).withUnsafeBytes { bytes in
            _ = try mount.request {
                try $0.write(inode: inode, handle: handle, offset: offset, bytes: bytes, flags: OpenFlags(rawValue: O_RDWR))
            }
        }
    }

    /// One program read the note; a pull removed a line; another program
    /// learned the new size and writes at its end after one more pull. Its
    /// bytes belong after the text it learned, not spliced into the older
    /// text the first program read (which would overwrite a line of it).
    @Test(arguments: [true, false])
    func aWriteAtTheEndAProgramLearnedIsMergedThroughItsViewNotThroughAnotherProgramsRead(skipsOpens: Bool) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "a\nb\nc\n")
        let mount = UnmountedFileSystem(tree: store.tree, skipsOpens: skipsOpens)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        func open() throws -> UInt64 {
            skipsOpens ? 0 : try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: O_RDWR)) }.handle
        }
        let reader = try open()
        let read = try mount.request { try $0.read(inode: inode, handle: reader, offset: 0, count: 4096) }
        #expect(String(decoding: read, as: UTF8.self) == "a\nb\nc\n")
        try pull(store, id, "a\nc\n", version: 2)
        let writer = try open()
        let size = try mount.request { try $0.getAttributes(inode: inode, handle: nil) }.attributes.size
        #expect(size == 4, "the writer learned the pulled text's size")
        try pull(store, id, "a\nc\nd\n", version: 3)
        try write(mount, inode, handle: writer, at: Int64(size), "mine\n")
        let shown = try texts(store)
        #expect(shown.contains("a\nc\nd\nmine\n") || shown.contains("a\nc\nmine\nd\n"), "every line kept once: \(shown)")
    }

    /// With open requests a read is remembered per handle too: a program
    /// opened the note after a pull its kernel had not yet heard of, so it
    /// read the old text; after another program's stat it writes at the end
    /// of what it read, and its bytes are merged through what it read
    /// instead of landing past the shorter new text.
    @Test func aWriteThroughTheHandleThatReadIsJudgedByItsReadAfterAnotherProgramsStat() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "a\nb\nc\n")
        let mount = UnmountedFileSystem(tree: store.tree, skipsOpens: false)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        try pull(store, id, "a\nc\n", version: 2)
        let handle = try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: O_RDWR)) }.handle
        let read = try mount.request { try $0.read(inode: inode, handle: handle, offset: 0, count: 4096) }
        #expect(String(decoding: read, as: UTF8.self) == "a\nb\nc\n", "read through the size the kernel still holds")
        let other = try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: O_RDONLY)) }.handle
        _ = try mount.request { try $0.getAttributes(inode: inode, handle: nil) }
        _ = try mount.request { try $0.read(inode: inode, handle: other, offset: 0, count: 4096) }
        try write(mount, inode, handle: handle, at: Int64(read.count), "x\n")
        let shown = try texts(store)
        #expect(shown == ["a\nc\nx\n"], "the removed line stays removed, the written one lands at the end: \(shown)")
    }

    /// A program rewrote the note through a view older than a pull (its save
    /// was merged); then another pull removed a line, and a second program
    /// learned the new size and wrote at its end. That write is not a piece of
    /// the first program's save: it lands at the end of the text it learned,
    /// not inside the first program's longer text.
    @Test func aWriteAtTheLearnedEndIsNotTakenIntoAnotherProgramsSaveThroughAStaleView() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "a\nbbbbbbbb\nc\n")
        let mount = UnmountedFileSystem(tree: store.tree, skipsOpens: false)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        let saver = try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: O_RDWR)) }.handle
        _ = try mount.request { try $0.read(inode: inode, handle: saver, offset: 0, count: 4096) }
        try pull(store, id, "a\nbbbbbbbb\nc\nd\n", version: 2)
        _ = try mount.request {
            try $0.setAttributes(inode: inode, changes: AttributeChanges(size: 0), handle: saver)
        }
        try write(mount, inode, handle: saver, at: 0, "a\nbbbbbbbb\nmine\n")
        #expect(try texts(store) == ["a\nbbbbbbbb\nmine\nd\n"], "the save merged with the pulled line")
        for change in try store.freezeBatch() { try store.settle(change.changeID, outcome: .applied(version: 3)) }
        try pull(store, id, "a\nmine\nd\n", version: 4)
        let appender = try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: O_WRONLY)) }.handle
        let size = try mount.request { try $0.getAttributes(inode: inode, handle: appender) }.attributes.size
        #expect(size == 9)
        try write(mount, inode, handle: appender, at: Int64(size), "x\n")
        let shown = try texts(store)
        #expect(shown == ["a\nmine\nd\nx\n"], "every line once, the new one at the end: \(shown)")
    }

    /// A program rewrote the note through a view older than a pull (its save
    /// was merged, and writes within a second count as the same save); with
    /// nothing changed since, a second program learned the merged text's size
    /// and wrote a line at its end within that second. A save writes its
    /// text in order, so that write is not the save's: it lands at the end of
    /// the merged text, not at that offset into the first program's own text
    /// (after zeros when the pull added a line, inside a line when it removed one).
    @Test(arguments: [(true, "a\nb\nc\npulled line\n"), (true, "b\nc\n"), (false, "a\nb\nc\npulled line\n"),
                      (false, "b\nc\n")])
    func aWriteAtTheMergedEndWithinAStaleSavesSecondIsNotTakenIntoTheSave(skipsOpens: Bool, pulled: String) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "a\nb\nc\n")
        let mount = UnmountedFileSystem(tree: store.tree, skipsOpens: skipsOpens)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        func open(_ flags: Int32) throws -> UInt64 {
            skipsOpens ? 0 : try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: flags)) }.handle
        }
        let saver = try open(O_RDWR)
        _ = try mount.request { try $0.read(inode: inode, handle: saver, offset: 0, count: 4096) }
        try pull(store, id, pulled, version: 2)
        _ = try mount.request {
            try $0.setAttributes(inode: inode, changes: AttributeChanges(size: 0), handle: saver)
        }
        try write(mount, inode, handle: saver, at: 0, "a\nb\nc\nmine, a longer line\n")
        let merged = try texts(store)
        #expect(merged.count == 1 && merged[0].contains("mine") && merged[0].hasSuffix("\n"), "\(merged)")
        let appender = try open(O_WRONLY)
        let size = try mount.request { try $0.getAttributes(inode: inode, handle: nil) }.attributes.size
        #expect(Int(size) == merged[0].utf8.count)
        try write(mount, inode, handle: appender, at: Int64(size), "x\n")
        let shown = try texts(store)
        #expect(shown == [merged[0] + "x\n"], "the merged text whole, the new line at its end: \(shown)")
    }

    /// An atomic save (a temp file written, then renamed over the note) of
    /// text a program read before a pull; `ls` told the kernel the new size
    /// in between. The save is merged with the pulled line as a rewrite
    /// through that read would be, whether the temp file has a local-only name
    /// or a note's.
    @Test(arguments: [true, false], [".n.tmp", "n-new"])
    func anAtomicSaveOfTextReadBeforeAPullKeepsThePulledLine(skipsOpens: Bool, temp: String) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "a\nb\nc\n")
        let mount = UnmountedFileSystem(tree: store.tree, skipsOpens: skipsOpens)
        defer { mount.close() }
        _ = try readThenPull(mount, store, id, "a\nb\nc\npulled\n", skipsOpens: skipsOpens)
        _ = mount.takeInvalidations()
        let tempInode = try atomicSave(mount, temp, "a\nB edited\nc\n", skipsOpens: skipsOpens)
        #expect(try texts(store) == ["a\nB edited\nc\npulled\n"], "both edits, merged")
        #expect(mount.takeInvalidations().contains(.inode(tempInode)), "the kernel's pages of the save are dropped")
        let shown = try mount.request { try $0.read(inode: tempInode, handle: 0, offset: 0, count: 4096) }
        #expect(String(decoding: shown, as: UTF8.self) == "a\nB edited\nc\npulled\n", "the saved name reads the merge")
    }

    /// The same save where the pulled change and the save touch the same
    /// line: the note keeps the pulled text, the save goes to the conflict copy.
    @Test func anAtomicSaveThatClashesWithAPulledChangeKeepsBothTexts() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "a\nb\nc\n")
        let mount = UnmountedFileSystem(tree: store.tree)
        defer { mount.close() }
        _ = try readThenPull(mount, store, id, "a\nb from elsewhere\nc\n", skipsOpens: true)
        _ = try atomicSave(mount, ".n.tmp", "a\nB edited\nc\n", skipsOpens: true)
        let shown = try texts(store)
        #expect(shown.count == 2 && shown.contains("a\nb from elsewhere\nc\n") && shown.contains("a\nB edited\nc\n"),
                "\(shown)")
    }

    /// A program that read the note after the pull saves what it means: its
    /// save replaces the text as it is, the removal of the pulled line included.
    @Test func anAtomicSaveOfTextReadAfterAPullReplacesTheNote() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, "a\nb\nc\n")
        let mount = UnmountedFileSystem(tree: store.tree)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        try pull(store, id, "a\nb\nc\npulled\n", version: 2)
        _ = try mount.request { try $0.getAttributes(inode: inode, handle: nil) }
        let read = try mount.request { try $0.read(inode: inode, handle: 0, offset: 0, count: 4096) }
        #expect(String(decoding: read, as: UTF8.self) == "a\nb\nc\npulled\n")
        _ = try atomicSave(mount, ".n.tmp", "a\nc\n", skipsOpens: true)
        #expect(try texts(store) == ["a\nc\n"])
    }

    /// Looks `n` up, reads it whole (through a handle when opens are sent),
    /// then a pull replaces its text and the kernel learns the new size (`ls`).
    func readThenPull(
        _ mount: UnmountedFileSystem, _ store: NotesStore, _ id: NoteID, _ pulled: String, skipsOpens: Bool
    ) throws -> UInt64 {
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        let handle = skipsOpens ? 0 : try mount.request {
            try $0.open(inode: inode, flags: OpenFlags(rawValue: O_RDONLY))
        }.handle
        _ = try mount.request { try $0.read(inode: inode, handle: handle, offset: 0, count: 4096) }
        if !skipsOpens { mount.request { $0.release(inode: inode, handle: handle) } }
        try pull(store, id, pulled, version: 2)
        _ = try mount.request { try $0.getAttributes(inode: inode, handle: nil) }
        return inode
    }

    /// Creates `temp`, writes `text` into it and renames it over `n`; returns the temp file's inode.
    func atomicSave(_ mount: UnmountedFileSystem, _ temp: String, _ text: String, skipsOpens: Bool) throws -> UInt64 {
        let context = RequestContext(uid: 0, gid: 0, pid: 1, umask: 0o022)
        let (entry, open) = try mount.request {
            try $0.create(parent: 1, name: temp, mode: 0o100644, flags: OpenFlags(rawValue: O_WRONLY), context: context)
        }
        let tempInode = entry.attributes.inode
        try write(mount, tempInode, handle: skipsOpens ? 0 : open.handle, at: 0, text)
        if !skipsOpens { mount.request { $0.release(inode: tempInode, handle: open.handle) } }
        try mount.request {
            try $0.rename(parent: 1, name: temp, newParent: 1, newName: "n", flags: RenameFlags(rawValue: 0))
        }
        return tempInode
    }

    /// With open requests: a program opened the note, a pull changed it,
    /// and the program then asked its descriptor for the size (`fstat`) and
    /// wrote a line there. It wrote against what it learned after the pull,
    /// not against its open: the line lands at the end, with no zeros.
    /// (Linux's `fstat` sends no handle, so the mount cannot tie the size it
    /// answered to the descriptor; the write's offset, the end of the text
    /// after the pull, tells.)
    @Test(arguments: [("a\nb\n", "a\nb\nc\n"), ("a\nbbbb\nc\n", "a\nc\n")])
    func aWriteAtTheSizeFstatGaveAfterAPullLandsAtTheEnd(synced: String, pulled: String) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try syncedNote(store, synced)
        let mount = UnmountedFileSystem(tree: store.tree, skipsOpens: false)
        defer { mount.close() }
        let inode = try mount.request { try $0.lookup(parent: 1, name: "n") }.attributes.inode
        let handle = try mount.request { try $0.open(inode: inode, flags: OpenFlags(rawValue: O_WRONLY)) }.handle
        try pull(store, id, pulled, version: 2)
        let size = try mount.request { try $0.getAttributes(inode: inode, handle: nil) }.attributes.size
        #expect(Int(size) == pulled.utf8.count)
        try write(mount, inode, handle: handle, at: Int64(size), "x\n")
        let shown = try texts(store)
        #expect(shown == [pulled + "x\n"], "\(shown)")
    }
}
