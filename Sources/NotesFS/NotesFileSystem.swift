import Foundation
import FuseKit
import NotesModel
import NotesStore
import Synchronization

/// The notes tree as a file system: maps each kernel request on a note,
/// folder or local-only entry to one store call (plus, at most, a cheap
/// read) and keeps the inode table. The hidden `.notesfs` directory is
/// `ControlFileSystem`'s; `FileSystemRouter` sends each request to one of the two.
final class NotesFileSystem: Sendable {
    let tree: NotesTree
    let inodes: InodeTable
    /// The open files and directories, shared with the control directory.
    let handles: HandleTable
    /// Folder attributes from memory (one getattr of the folder per created file).
    let folderAttributes: FolderAttributeCache
    let log: MountLog
    let invalidations: InvalidationQueue
    /// Close/fsync hooks for the sync engine (set by the command).
    let hooks: MountHooks
    /// The owner shown for every entry (the user running the mount).
    let ownerUID: UInt32
    let ownerGID: UInt32
    /// Where statfs looks for free space (the database's directory).
    let dataDirectory: String

    /// A listing asks the store for this many entries at a time.
    static let listBatchEntries = 512
    /// Reads larger than this are cut (the kernel asks for at most max_read anyway).
    static let readBytesMax = 16 << 20

    init(
        tree: NotesTree, inodes: InodeTable, handles: HandleTable, folderAttributes: FolderAttributeCache,
        invalidations: InvalidationQueue, hooks: MountHooks, log: MountLog
    ) {
        self.tree = tree
        self.inodes = inodes
        self.handles = handles
        self.folderAttributes = folderAttributes
        self.invalidations = invalidations
        self.hooks = hooks
        self.log = log
        ownerUID = getuid()
        ownerGID = getgid()
        dataDirectory = (tree.path as NSString).deletingLastPathComponent
    }

    /// True once the kernel agreed to open files without asking (`HandleTable`).
    var opensAreSkipped: Bool { handles.opensAreSkipped }

    // MARK: Resolving inodes

    /// The entry an inode stands for; ENOENT once it was deleted or replaced.
    func resolve(_ inode: UInt64) throws -> EntryRef {
        if let ref = inodes.ref(for: inode) { return ref }
        if inodes.isKnown(inode) { throw FileSystemError.notFound }
        // Not handed out in this session (or already forgotten): ask the store.
        guard let ref = try tree.entryRef(forInode: inode) else { throw FileSystemError(ESTALE) }
        return ref
    }

    func directory(_ inode: UInt64) throws -> DirectoryRef {
        guard let directory = try resolve(inode).directory else { throw FileSystemError.notADirectory }
        return directory
    }

    /// The inode number for `ref`: the one the kernel holds, else the store's.
    func inodeNumber(for ref: EntryRef) throws -> UInt64 {
        if let known = inodes.inode(for: ref) { return known }
        return try tree.inode(for: ref)
    }

    func attributes(_ entry: Entry, inode: UInt64) -> FileAttributes {
        let kind: FileKind
        switch entry.kind {
        case .directory: kind = .directory
        case .file: kind = .regular
        case .symlink: kind = .symlink
        }
        return FileAttributes(
            inode: inode, kind: kind, size: UInt64(max(0, entry.size)), permissions: entry.mode & 0o7777,
            linkCount: kind == .directory ? 2 + UInt32(clamping: entry.subdirectories) : 1, uid: ownerUID, gid: ownerGID,
            accessTimeNanoseconds: entry.accessedNanoseconds, modificationTimeNanoseconds: entry.modifiedNanoseconds,
            changeTimeNanoseconds: entry.changedNanoseconds)
    }

    func reply(_ attributes: FileAttributes) -> EntryReply { CacheTimeouts.entryReply(attributes) }

    /// Hands `entry` to the kernel: counts the lookup and builds the reply.
    /// `view` is the store's `kernelViewGeneration` read before `entry` was.
    func handOut(_ entry: Entry, view: UInt64) throws -> EntryReply {
        handOut(entry, inode: try inodeNumber(for: entry.ref), view: view)
    }

    /// Hands `entry` to the kernel under `inode`.
    func handOut(_ entry: Entry, inode: UInt64, view: UInt64) -> EntryReply {
        inodes.lookedUp(inode, ref: entry.ref, view: view)
        return reply(attributes(entry, inode: inode))
    }

    /// Gives handles still open on the entry at `name` their own copy of its
    /// bytes before it is removed or replaced, so they keep reading the old text.
    /// Without open requests the file system cannot know whether a descriptor
    /// is open, so any inode the kernel still holds keeps its bytes until the
    /// kernel forgets it (right after the unlink when nothing has it open).
    func preserveOpenHandles(of entry: Entry) {
        guard entry.kind == .file, let inode = inodes.inode(for: entry.ref) else { return }
        let skipped = opensAreSkipped
        guard skipped || handles.hasAttachedHandle(on: inode) else { return }
        do {
            let content = try tree.read(entry.ref, offset: 0, count: Self.readBytesMax)
            // Its name is about to go: what is left is an unlinked file.
            var detached = attributes(entry, inode: inode)
            detached.linkCount = 0
            detached.changeTimeNanoseconds = max(detached.changeTimeNanoseconds, Self.nowNanoseconds())
            let snapshot = HandleTable.Snapshot(content: content, attributes: detached)
            if skipped {
                inodes.setSnapshot(inode, snapshot)
            } else {
                handles.detachHandles(on: inode, snapshot: snapshot)
            }
        } catch {
            log.warning("could not keep the old bytes of \(entry.ref) for its open handles: \(error)")
        }
    }

    // MARK: Lookup and attributes

    func lookup(parent: UInt64, name: String) throws -> EntryReply {
        let directory = try directory(parent)
        let view = tree.kernelViewGeneration
        guard let entry = try tree.lookup(in: directory, name: name) else { return CacheTimeouts.negativeEntryReply() }
        return try handOut(entry, view: view)
    }

    func forget(inode: UInt64, count: UInt64) {
        if !inodes.forget(inode, count: count) {
            log.warning("kernel forgot inode \(inode) more often than it looked it up")
        }
    }

    func getAttributes(inode: UInt64, handle: UInt64?) throws -> FileAttributes {
        if let handle, case .file(_, _, let snapshot?) = handles.handle(handle) {
            return snapshot.attributes
        }
        if let snapshot = inodes.snapshot(of: inode) { return snapshot.attributes }
        let ref: EntryRef
        do {
            ref = try resolve(inode)
        } catch let error as FileSystemError where error == .notFound {
            // Detached while open (with open requests): the bytes live with
            // the handles, and `fstat` sends none (Linux's getattr never does).
            if let attributes = handles.detachedAttributes(ofInode: inode) { return attributes }
            throw error
        }
        guard case .folder = ref else {
            let view = tree.kernelViewGeneration
            guard let entry = try tree.entry(for: ref) else { throw FileSystemError.notFound }
            inodes.learned(inode, view: view)
            return attributes(entry, inode: inode)
        }
        if let kept = folderAttributes.entry(of: inode, ref: ref) { return attributes(kept, inode: inode) }
        let generation = folderAttributes.generation
        guard let entry = try tree.entry(for: ref) else { throw FileSystemError.notFound }
        folderAttributes.keep(entry, of: inode, readAt: generation)
        return attributes(entry, inode: inode)
    }

    func setAttributes(inode: UInt64, changes: AttributeChanges, handle: UInt64?) throws -> FileAttributes {
        try Self.refuseOtherOwner(changes, uid: ownerUID, gid: ownerGID)
        if let handle, let size = changes.size,
            let snapshot = handles.updateSnapshot(handle, { snapshot in
                Self.resize(&snapshot.content, to: Int(clamping: size))
                snapshot.attributes.size = size
            })
        {
            return snapshot.attributes
        }
        if let snapshot = inodes.updateSnapshot(inode, { snapshot in
            if let size = changes.size {
                Self.resize(&snapshot.content, to: Int(clamping: size))
                snapshot.attributes.size = size
            }
        }) {
            return snapshot.attributes
        }
        let ref = try resolve(inode)
        // Each change is its own small transaction; the common cases
        // (truncate, chmod, touch) change one thing.
        // As for a rewrite: stale when a change landed after the handle was
        // opened (ftruncate sends its handle), after the kernel last learned
        // the size, or after a read of the file, whichever came first.
        if let size = changes.size,
            try tree.truncate(ref, to: Int64(clamping: size), view: truncationView(inode: inode, handle: handle))
        {
            // Merged with text the truncating program had not seen: what the
            // kernel holds of the file is not what is stored.
            dropKernelView(of: inode)
        }
        if let permissions = changes.permissions { try tree.setMode(ref, mode: permissions) }
        if changes.accessTime != nil || changes.modificationTime != nil {
            let now = Self.nowNanoseconds()
            func nanoseconds(_ time: AttributeChanges.Time?) -> Int64? {
                switch time {
                case .now: now
                case .nanoseconds(let value): value
                case nil: nil
                }
            }
            try tree.setTimes(
                ref, accessed: nanoseconds(changes.accessTime), modified: nanoseconds(changes.modificationTime))
        } else if changes.permissions == nil, changes.size == nil, changes.uid != nil || changes.gid != nil {
            // A chown to the owner it has: only the ctime moves.
            try tree.touchStatus(ref)
        }
        let view = tree.kernelViewGeneration
        guard let entry = try tree.entry(for: ref) else { throw FileSystemError.notFound }
        inodes.learned(inode, view: view)
        return attributes(entry, inode: inode)
    }

    /// The view a truncation is judged by: a rewrite's (see `InodeTable.viewForWrite`),
    /// and with a handle (`ftruncate`) also the handle's open and reads.
    private func truncationView(inode: UInt64, handle: UInt64?) -> UInt64? {
        let views = (handle.map { handles.viewsForWrite(through: $0) } ?? [])
            + [inodes.viewForWrite(of: inode, rewrite: true)].compactMap { $0 }
        return views.min()
    }

    /// Every entry belongs to the user running the mount: a chown to anyone
    /// else cannot be kept (checked first, so nothing else of the request is
    /// applied), one that changes nothing succeeds.
    static func refuseOtherOwner(_ changes: AttributeChanges, uid: UInt32, gid: UInt32) throws {
        if let newUID = changes.uid, newUID != uid { throw FileSystemError.notPermitted }
        if let newGID = changes.gid, newGID != gid { throw FileSystemError.notPermitted }
    }

    static func resize(_ data: inout Data, to size: Int) {
        if size < data.count {
            data.removeSubrange(data.startIndex + size..<data.endIndex)
        } else if size > data.count {
            data.append(Data(count: size - data.count))
        }
    }

    static func nowNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    func statistics(inode: UInt64) throws -> FileSystemStatistics {
        var info = statvfs()
        guard statvfs(dataDirectory, &info) == 0 else {
            let code = errno
            throw FileSystemError(code)
        }
        return FileSystemStatistics(
            blockSize: UInt64(info.f_frsize), totalBlocks: UInt64(info.f_blocks), freeBlocks: UInt64(info.f_bfree),
            availableBlocks: UInt64(info.f_bavail), totalFiles: UInt64(info.f_files), freeFiles: UInt64(info.f_ffree),
            nameMax: 255)
    }
}
