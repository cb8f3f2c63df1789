import Foundation
import FuseKit
import NotesStore
import Synchronization

/// The hidden `.notesfs` directory as a file system: every request on one of
/// its inodes (status files, history, trash, past moments), and every
/// request that names `.notesfs` in the root. Nothing here changes: what a
/// request would change fails, with EROFS inside `.notesfs/at`. Moving a note
/// out of the trash is a restore, which `FileSystemRouter` hands to the notes.
final class ControlFileSystem: Sendable {
    /// The directory's nodes, inode numbers and generated contents.
    let directory: ControlDirectory
    /// The open files and directories, shared with the notes.
    let handles: HandleTable
    let tree: NotesTree
    let ownerUID: UInt32
    let ownerGID: UInt32

    /// Generated control-file contents by inode, as of the last getattr or
    /// read, so a read returns what the size just reported promised.
    private let contents = Mutex<[UInt64: (content: Data, madeAt: UInt64)]>([:])
    /// How long generated control content is reused (one `cat`).
    static let contentReuseNanoseconds: UInt64 = 1_000_000_000
    static let readOnly = FileSystemError(EROFS)

    init(directory: ControlDirectory, handles: HandleTable, tree: NotesTree) {
        self.directory = directory
        self.handles = handles
        self.tree = tree
        ownerUID = getuid()
        ownerGID = getgid()
    }

    /// True when a request on `inode`, or on `name` in `parent`, is this file system's.
    static func owns(_ inode: UInt64) -> Bool { ControlDirectory.owns(inode) }

    static func owns(parent: UInt64, name: String) -> Bool {
        ControlDirectory.owns(parent) || (parent == 1 && name == ControlDirectory.name)
    }

    /// Throws EROFS when any of `inodes` is `.notesfs/at` or inside it: a
    /// past moment is read-only, and nothing there reaches the store.
    static func refuseChangeInMoments(_ inodes: UInt64...) throws {
        for inode in inodes where ControlDirectory.isInMoments(inode) { throw readOnly }
    }

    /// The node of `inode`; ESTALE for a number in the range that names none
    /// (as for any number the store never handed out).
    private func node(_ inode: UInt64) throws -> ControlDirectory.Node {
        guard let node = ControlDirectory.node(forInode: inode) else { throw FileSystemError(ESTALE) }
        return node
    }

    /// A control file's content, fresh unless made within the reuse window.
    func content(_ node: ControlDirectory.Node, inode: UInt64, fresh: Bool) throws -> Data {
        let now = DispatchTime.now().uptimeNanoseconds
        if !fresh, let cached = contents.withLock({ $0[inode] }), now &- cached.madeAt < Self.contentReuseNanoseconds {
            return cached.content
        }
        let content = try directory.content(node)
        contents.withLock { contents in
            contents = contents.filter { now &- $0.value.madeAt < Self.contentReuseNanoseconds }
            contents[inode] = (content, now)
        }
        return content
    }

    /// Attributes of a control node; for generated files, of content made now.
    func attributes(_ node: ControlDirectory.Node, inode: UInt64) throws -> FileAttributes {
        switch node {
        case .root, .history, .historyItem, .trash, .trashDirectory, .trashItem, .at, .moment:
            return try directory.attributes(node, uid: ownerUID, gid: ownerGID)
        default:
            let content = try content(node, inode: inode, fresh: true)
            return directory.generatedAttributes(node, size: content.count, uid: ownerUID, gid: ownerGID)
        }
    }

    // MARK: Names and attributes

    func lookup(parent: UInt64, name: String) throws -> EntryReply {
        guard let node = directory.child(ofInode: parent, name: name) else { return CacheTimeouts.negativeEntryReply() }
        let inode = ControlDirectory.inode(node)
        var entry = CacheTimeouts.entryReply(try attributes(node, inode: inode))
        entry.attributeTimeoutSeconds = CacheTimeouts.attributeSeconds(of: inode)
        entry.entryTimeoutSeconds = CacheTimeouts.entrySeconds(of: inode)
        return entry
    }

    func getAttributes(inode: UInt64) throws -> FileAttributes {
        try attributes(try node(inode), inode: inode)
    }

    func setAttributes(inode: UInt64, changes: AttributeChanges) throws -> FileAttributes {
        try Self.refuseChangeInMoments(inode)
        try NotesFileSystem.refuseOtherOwner(changes, uid: ownerUID, gid: ownerGID)
        let node = try node(inode)
        // Truncation is how `open(…, "w")` of a control file reaches us when
        // opens are skipped: refused as the open itself would be.
        if changes.size != nil { throw FileSystemError.accessDenied }
        if changes.permissions != nil { throw FileSystemError.notPermitted }
        return try attributes(node, inode: inode)
    }

    /// mknod, create, symlink, unlink, rmdir, link: nothing is made or removed here.
    func refuseChange(in inodes: UInt64...) throws -> Never {
        for inode in inodes where ControlDirectory.isInMoments(inode) { throw Self.readOnly }
        throw FileSystemError.notPermitted
    }

    /// mkdir: the name is taken (`.notesfs` itself, or a name here).
    func makeDirectory(parent: UInt64) throws -> Never {
        try Self.refuseChangeInMoments(parent)
        throw FileSystemError.exists
    }

    // MARK: Files

    func open(inode: UInt64, flags: OpenFlags) throws -> OpenReply {
        if handles.opensAreSkipped { throw NotesFileSystem.opensSkipped }
        let node = try node(inode)
        guard !flags.canWrite else { throw node.isInMoments ? Self.readOnly : FileSystemError.accessDenied }
        let content = try directory.content(node)
        let handle = try handles.open(.generated(inode: inode, content: content))
        return OpenReply(handle: handle, keepCache: false, directIO: true)
    }

    func read(inode: UInt64, handle: UInt64, offset: Int64, count: Int) throws -> Data {
        let wanted = min(count, NotesFileSystem.readBytesMax)
        switch handle == 0 ? nil : handles.handle(handle) {
        case .generated(_, let content):
            return NotesFileSystem.slice(content, offset: offset, count: wanted)
        case .directory:
            throw FileSystemError.isADirectory
        case .file, nil:
            guard handle == 0 else { throw FileSystemError.badHandle }
            // Opened without an open request.
            let content = try content(try node(inode), inode: inode, fresh: false)
            return NotesFileSystem.slice(content, offset: offset, count: wanted)
        }
    }

    func write(inode: UInt64, handle: UInt64) throws -> Never {
        // Opened without an open request (the kernel checked the access mode).
        if handle == 0 {
            try Self.refuseChangeInMoments(inode)
            throw FileSystemError.accessDenied
        }
        throw FileSystemError.badHandle
    }

    func release(handle: UInt64) {
        handles.close(handle)
    }

    // MARK: Directories

    /// Generated listings (history) change without notice: never cached.
    func openDirectory(inode: UInt64) throws -> OpenReply {
        OpenReply(handle: try handles.open(.directory(inode: inode)), keepCache: false, directIO: true)
    }

    func readDirectory(inode: UInt64, offset: Int64, add: (DirectoryEntry) -> Bool) throws {
        try directory.list(
            directoryInode: inode, offset: offset, uid: ownerUID, gid: ownerGID, reply: CacheTimeouts.entryReply,
            add: add)
    }

    // MARK: Extended attributes

    /// Setting a `user.notesfs.*` attribute: refused as on a number the store never handed out.
    func setExtendedAttribute(inode: UInt64, name: String) throws -> Never {
        try Self.refuseChangeInMoments(inode)
        guard name.hasPrefix(NotesFileSystem.attributePrefix) else { throw FileSystemError.notSupported }
        throw FileSystemError(ESTALE)
    }

    func removeExtendedAttribute(inode: UInt64, name: String) throws {
        try Self.refuseChangeInMoments(inode)
        guard name.hasPrefix(NotesFileSystem.attributePrefix) else { throw FileSystemError.noData }
    }
}
