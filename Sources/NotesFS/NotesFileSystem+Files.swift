import Foundation
import FuseKit
import NotesStore

// Files: open, create, read, write, fsync, release.
extension NotesFileSystem {
    func open(inode: UInt64, flags: OpenFlags) throws -> OpenReply {
        if opensAreSkipped { throw Self.opensSkipped }
        let view = tree.kernelViewGeneration
        if !(flags.truncate && flags.canWrite), inodes.ref(for: inode) != nil {
            // The common case answers from memory: the kernel only opens
            // regular files here (directories go to opendir), the inode is
            // attached to a live entry, and whether the kernel's pages are
            // current is tracked without reading the store.
            let keepCache = inodes.noteOpened(inode)
            let handle = try handles.open(.file(inode: inode, flags: flags, snapshot: nil), view: view)
            return OpenReply(handle: handle, keepCache: keepCache, directIO: false)
        }
        let ref = try resolve(inode)
        guard var entry = try tree.entry(for: ref) else { throw FileSystemError.notFound }
        guard entry.kind != .directory else { throw FileSystemError.isADirectory }
        var keepCache = false
        if flags.truncate && flags.canWrite {
            // Judged as `ftruncate` is: a program that read the note before a
            // pull and now saves it over (open with O_TRUNC, then writes)
            // starts a save through the view it read.
            if entry.size > 0 {
                if try tree.truncate(ref, to: 0, view: inodes.viewForWrite(of: inode, rewrite: true)) {
                    dropKernelView(of: inode)
                }
                entry.size = 0
            }
            // The kernel drops its pages at this open; what it caches from
            // here on comes through it and stays current.
            inodes.distrustCache(inode)
            _ = inodes.noteOpened(inode)
        } else {
            keepCache = inodes.noteOpened(inode)
        }
        let handle = try handles.open(.file(inode: inode, flags: flags, snapshot: nil), view: view)
        return OpenReply(handle: handle, keepCache: keepCache, directIO: false)
    }

    /// The first open of a file after the kernel offered to skip opens:
    /// ENOSYS makes it succeed in the kernel and stop sending open and release
    /// for files (pages kept; O_TRUNC arrives as a setattr).
    static let opensSkipped = FileSystemError(ENOSYS)

    func create(parent: UInt64, name: String, mode: UInt32, flags: OpenFlags, context: RequestContext) throws
        -> (EntryReply, OpenReply)
    {
        let directory = try directory(parent)
        let view = tree.kernelViewGeneration
        var (entry, inode) = try tree.createFileNumbered(
            in: directory, name: name, mode: mode & 0o7777 & ~context.umask, exclusive: flags.exclusive)
        if entry.size > 0 && flags.truncate && flags.canWrite {
            // create() of a name that appeared since the kernel's lookup.
            try tree.truncate(entry.ref, to: 0)
            entry.size = 0
        }
        let reply = handOut(entry, inode: inodes.inode(for: entry.ref) ?? inode, view: view)
        _ = inodes.noteOpened(reply.attributes.inode)
        // Without open requests there is no release either: no handle to keep.
        if opensAreSkipped { return (reply, OpenReply(handle: 0, keepCache: true, directIO: false)) }
        let handle = try handles.open(.file(inode: reply.attributes.inode, flags: flags, snapshot: nil), view: view)
        return (reply, OpenReply(handle: handle, keepCache: false, directIO: false))
    }

    func makeNode(parent: UInt64, name: String, mode: UInt32, context: RequestContext) throws -> EntryReply {
        // Only regular files; device files, FIFOs and sockets are refused.
        guard mode & S_IFMT == S_IFREG else { throw FileSystemError.notPermitted }
        let view = tree.kernelViewGeneration
        let entry = try tree.createFile(
            in: try directory(parent), name: name, mode: mode & 0o7777 & ~context.umask, exclusive: true)
        return try handOut(entry, view: view)
    }

    /// Hard links are refused.
    func link(inode: UInt64, newParent: UInt64, newName: String) throws -> EntryReply {
        throw FileSystemError.notPermitted
    }

    func read(inode: UInt64, handle: UInt64, offset: Int64, count: Int) throws -> Data {
        let wanted = min(count, Self.readBytesMax)
        switch handle == 0 ? nil : handles.handle(handle) {
        case .generated(_, let content):
            return Self.slice(content, offset: offset, count: wanted)
        case .file(_, _, let snapshot?):
            return Self.slice(snapshot.content, offset: offset, count: wanted)
        case .file:
            let view = inodes.viewForRead(of: inode)
            if let view { handles.servedRead(through: handle, view: view) }
            return try tree.read(try resolve(inode), offset: offset, count: wanted, view: view)
        case .directory:
            throw FileSystemError.isADirectory
        case nil:
            guard handle == 0 else { throw FileSystemError.badHandle }
            // Opened without an open request.
            if let snapshot = inodes.snapshot(of: inode) {
                return Self.slice(snapshot.content, offset: offset, count: wanted)
            }
            return try tree.read(try resolve(inode), offset: offset, count: wanted, view: inodes.viewForRead(of: inode))
        }
    }

    static func slice(_ data: Data, offset: Int64, count: Int) -> Data {
        guard offset < Int64(data.count), count > 0 else { return Data() }
        let start = data.startIndex + Int(offset)
        let end = min(data.endIndex, start + count)
        return data.subdata(in: start..<end)
    }

    func write(
        inode: UInt64, handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer, flags: OpenFlags
    ) throws -> Int {
        if handle == 0 {
            // Opened without an open request (the kernel checked the access mode).
            let data = Data(bytes)
            if inodes.updateSnapshot(inode, { Self.write(data, at: offset, into: &$0) }) != nil {
                return data.count
            }
            try storeWrite(
                inode: inode, offset: offset, bytes: data, append: flags.append,
                view: inodes.viewForWrite(of: inode, rewrite: offset == 0))
            return data.count
        }
        switch handles.handle(handle) {
        case .generated, .directory, nil:
            throw FileSystemError.badHandle
        case .file(_, let openFlags, let snapshot):
            guard openFlags.canWrite else { throw FileSystemError.badHandle }
            let data = Data(bytes)
            if snapshot != nil {
                // A replaced or unlinked file: the bytes stay with this handle only.
                _ = handles.updateSnapshot(handle) { Self.write(data, at: offset, into: &$0) }
                return data.count
            }
            // Stale when a change landed after the open, after the kernel
            // last learned the size or after what was read through this
            // handle, whichever came first (see `InodeTable.viewForWrite`).
            let views = handles.viewsForWrite(through: handle)
                + [inodes.viewForWrite(of: inode, rewrite: offset == 0)].compactMap { $0 }
            try storeWrite(
                inode: inode, offset: offset, bytes: data, append: openFlags.append || flags.append, view: views.min())
            return data.count
        }
    }

    /// A write into the store. An append lands at the note's real end (the
    /// kernel computed its offset from the size it cached, which a pull may
    /// have made stale), and a write through a stale view is merged with what
    /// its writer had not seen; either way the kernel's copy is then dropped.
    private func storeWrite(inode: UInt64, offset: Int64, bytes: Data, append: Bool, view: UInt64?) throws {
        let result = try tree.write(try resolve(inode), offset: offset, bytes: bytes, append: append, view: view)
        if result.kernelViewStale { dropKernelView(of: inode) }
    }

    /// The kernel's pages and size of `inode` are not what the store holds:
    /// queued for the invalidation thread (never sent from a request handler).
    func dropKernelView(of inode: UInt64) {
        inodes.distrustCache(inode)
        invalidations.enqueue([.inode(inode)])
    }

    /// Writes into a detached inode's or handle's own bytes.
    static func write(_ data: Data, at offset: Int64, into snapshot: inout HandleTable.Snapshot) {
        let end = Int(offset) + data.count
        if end > snapshot.content.count { resize(&snapshot.content, to: end) }
        snapshot.content.replaceSubrange(
            snapshot.content.startIndex + Int(offset)..<snapshot.content.startIndex + end, with: data)
        snapshot.attributes.size = UInt64(snapshot.content.count)
    }

    func release(inode: UInt64, handle: UInt64) {
        let wasFile = if case .file = handles.handle(handle) { true } else { false }
        handles.close(handle)
        if wasFile { hooks.fileClosed() }
    }

    func fsync(inode: UInt64, handle: UInt64, dataOnly: Bool) throws {
        if handle == 0 {
            // Opened without an open request: sync unless the bytes are a detached inode's own.
            if inodes.snapshot(of: inode) == nil {
                try tree.durableSync(of: try resolve(inode), dataOnly: dataOnly)
                hooks.fileClosed()
            }
            return
        }
        if case .file(_, _, nil) = handles.handle(handle) {
            try tree.durableSync(of: try resolve(inode), dataOnly: dataOnly)
            hooks.fileClosed()
        }
    }

    func readLink(inode: UInt64) throws -> String {
        try tree.readLink(try resolve(inode))
    }

    func makeSymlink(parent: UInt64, name: String, target: String) throws -> EntryReply {
        let view = tree.kernelViewGeneration
        let entry = try tree.makeSymlink(in: try directory(parent), name: name, target: target)
        return try handOut(entry, view: view)
    }
}
