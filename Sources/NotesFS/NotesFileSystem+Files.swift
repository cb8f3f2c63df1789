import Foundation
import NotesStore

// Files: open, create, read, write, fsync, release.
extension NotesFileSystem {
    public func open(inode: UInt64, flags: OpenFlags) throws -> OpenReply {
        if let node = ControlDirectory.node(forInode: inode) {
            guard !flags.canWrite else { throw FileSystemError.accessDenied }
            let content = try control.content(node)
            let handle = try handles.open(.generated(inode: inode, content: content))
            return OpenReply(handle: handle, keepCache: false, directIO: true)
        }
        let ref = try resolve(inode)
        guard var entry = try store.entry(for: ref) else { throw FileSystemError.notFound }
        guard entry.kind != .directory else { throw FileSystemError.isADirectory }
        var keepCache = false
        if flags.truncate && flags.canWrite {
            if entry.size > 0 {
                try store.truncate(ref, to: 0)
                entry.size = 0
            }
            inodes.clearOpenedVersion(inode)
        } else {
            keepCache = inodes.noteOpened(inode, version: Self.version(entry))
        }
        let handle = try handles.open(.file(inode: inode, flags: flags, snapshot: nil))
        return OpenReply(handle: handle, keepCache: keepCache, directIO: false)
    }

    public func create(parent: UInt64, name: String, mode: UInt32, flags: OpenFlags, context: RequestContext) throws
        -> (EntryReply, OpenReply)
    {
        if ControlDirectory.owns(parent) || control.child(ofInode: parent, name: name) != nil {
            throw FileSystemError.notPermitted
        }
        let directory = try directory(parent)
        var entry = try store.createFile(
            in: directory, name: name, mode: mode & 0o7777 & ~context.umask, exclusive: flags.exclusive)
        if entry.size > 0 && flags.truncate && flags.canWrite {
            // create() of a name that appeared since the kernel's lookup.
            try store.truncate(entry.ref, to: 0)
            entry.size = 0
        }
        let reply = try handOut(entry)
        _ = inodes.noteOpened(reply.attributes.inode, version: Self.version(entry))
        let handle = try handles.open(.file(inode: reply.attributes.inode, flags: flags, snapshot: nil))
        return (reply, OpenReply(handle: handle, keepCache: false, directIO: false))
    }

    public func makeNode(parent: UInt64, name: String, mode: UInt32, context: RequestContext) throws -> EntryReply {
        // Only regular files; device files, FIFOs and sockets are refused.
        guard mode & S_IFMT == S_IFREG else { throw FileSystemError.notPermitted }
        if ControlDirectory.owns(parent) || control.child(ofInode: parent, name: name) != nil {
            throw FileSystemError.notPermitted
        }
        let entry = try store.createFile(
            in: try directory(parent), name: name, mode: mode & 0o7777 & ~context.umask, exclusive: true)
        return try handOut(entry)
    }

    public func link(inode: UInt64, newParent: UInt64, newName: String) throws -> EntryReply {
        throw FileSystemError.notPermitted
    }

    public func read(inode: UInt64, handle: UInt64, offset: Int64, count: Int) throws -> Data {
        let wanted = min(count, Self.readBytesMax)
        switch handles.handle(handle) {
        case .generated(_, let content):
            return Self.slice(content, offset: offset, count: wanted)
        case .file(_, _, let snapshot?):
            return Self.slice(snapshot.content, offset: offset, count: wanted)
        case .file:
            return try store.read(try resolve(inode), offset: offset, count: wanted)
        case .directory:
            throw FileSystemError.isADirectory
        case nil:
            throw FileSystemError.badHandle
        }
    }

    static func slice(_ data: Data, offset: Int64, count: Int) -> Data {
        guard offset < Int64(data.count), count > 0 else { return Data() }
        let start = data.startIndex + Int(offset)
        let end = min(data.endIndex, start + count)
        return data.subdata(in: start..<end)
    }

    public func write(inode: UInt64, handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer) throws -> Int {
        switch handles.handle(handle) {
        case .generated, .directory, nil:
            throw FileSystemError.badHandle
        case .file(_, let flags, let snapshot):
            guard flags.canWrite else { throw FileSystemError.badHandle }
            let data = Data(bytes)
            if snapshot != nil {
                // A replaced or unlinked file: the bytes stay with this handle only.
                _ = handles.updateSnapshot(handle) { snapshot in
                    let end = Int(offset) + data.count
                    if end > snapshot.content.count { Self.resize(&snapshot.content, to: end) }
                    snapshot.content.replaceSubrange(
                        snapshot.content.startIndex + Int(offset)..<snapshot.content.startIndex + end, with: data)
                    snapshot.attributes.size = UInt64(snapshot.content.count)
                }
                return data.count
            }
            try store.write(try resolve(inode), offset: offset, bytes: data)
            return data.count
        }
    }

    public func flush(inode: UInt64, handle: UInt64) throws {
        // Every write is already committed; nothing is buffered here.
    }

    public func release(inode: UInt64, handle: UInt64) {
        let wasFile = if case .file = handles.handle(handle) { true } else { false }
        handles.close(handle)
        if wasFile { hooks.fileClosed() }
    }

    public func fsync(inode: UInt64, handle: UInt64, dataOnly: Bool) throws {
        if case .file(_, _, nil) = handles.handle(handle) {
            try store.durableSync()
            hooks.fileClosed()
        }
    }

    public func readLink(inode: UInt64) throws -> String {
        guard !ControlDirectory.owns(inode) else { throw FileSystemError.invalid }
        return try store.readLink(try resolve(inode))
    }

    public func makeSymlink(parent: UInt64, name: String, target: String) throws -> EntryReply {
        if ControlDirectory.owns(parent) || control.child(ofInode: parent, name: name) != nil {
            throw FileSystemError.notPermitted
        }
        let entry = try store.makeSymlink(in: try directory(parent), name: name, target: target)
        return try handOut(entry)
    }
}
