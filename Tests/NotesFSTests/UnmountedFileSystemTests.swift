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
}
