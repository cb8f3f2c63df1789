import Foundation
import FuseKit
import NotesStore

@testable import NotesFS

/// The Linux FUSE client, in process: system calls by path, turned into the
/// requests the kernel sends to the real file system over a real store,
/// with no `/dev/fuse` (swift-nio's `EmbeddedChannel`, for the file system).
///
/// What it does as the kernel does: a path walk looks up each component and
/// counts the lookup; every inode an answer hands out (lookup, create, mkdir,
/// symlink, mknod, readdirplus) is counted, and after each system call every
/// inode no descriptor holds is forgotten with its whole count (as memory
/// pressure evicts it), so forget traffic is as heavy as it gets. Without
/// open requests (the mount's default) the first open is answered `ENOSYS`
/// and no open or release follows, handle 0; `O_TRUNC` arrives as a
/// `setattr` of size 0 after the open. An `O_APPEND` write lands at the size
/// the kernel cached from its last reply or write; a read is cut at that
/// size. A listing is read in pages of `listingPageEntries`, each continuing
/// from the offset of the last entry taken. Errors become errno through the
/// file system's own `errorNumber(for:)` and are thrown as `FileSystemError`.
///
/// Not modelled: entry and attribute timeouts (every walk asks again, as
/// after they expired), the page cache, symlinks in a path.
final class InProcessKernel {
    struct Descriptor {
        var inode: UInt64
        var handle: UInt64
        var flags: OpenFlags
        var position: Int64 = 0
    }

    let mount: UnmountedFileSystem
    let skipsOpens: Bool
    /// Entries of a listing taken per readdir request.
    var listingPageEntries = 3
    /// Every invalidation the mount sent, in order.
    private(set) var invalidations: [Invalidation] = []
    /// Lookups the kernel holds per inode (the root's is implicit).
    private(set) var lookups: [UInt64: UInt64] = [:]
    private var descriptors: [Int32: Descriptor] = [:]
    private var nextDescriptor: Int32 = 3
    /// The size the kernel cached per inode (`i_size`).
    var cachedSizes: [UInt64: Int64] = [:]
    private var learnedOpensAreSkipped = false
    private let logPath: String
    private let log: MountLog
    let context = RequestContext(uid: getuid(), gid: getgid(), pid: getpid(), umask: 0o022)

    static let nameBytesMax = 255

    init(tree: NotesTree, logDirectory: String, skipsOpens: Bool = true) throws {
        logPath = logDirectory + "/in-process-kernel.log"
        log = try MountLog(path: logPath, alsoStandardError: false)
        mount = UnmountedFileSystem(tree: tree, log: log, skipsOpens: skipsOpens)
        self.skipsOpens = skipsOpens
    }

    /// Closes every descriptor, forgets every inode and stops following the store.
    func close() {
        for descriptor in Array(descriptors.keys) { try? self.close(descriptor) }
        forgetUnheld()
        mount.close()
    }

    /// What the mount logged (a forget beyond the lookups counted is logged there).
    var logText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    // MARK: Requests

    /// One request, marked as the kernel's own; errors become their errno.
    func request<T>(changingNamesIn directories: [UInt64] = [], _ body: (any FileSystemOperations) throws -> T) throws
        -> T
    {
        defer { collectInvalidations() }
        do {
            return try mount.request(changingNamesIn: directories, body)
        } catch let error as FileSystemError {
            throw error
        } catch {
            throw FileSystemError(mount.request { $0.errorNumber(for: error) })
        }
    }

    private func collectInvalidations() {
        for item in mount.takeInvalidations() {
            invalidations.append(item)
            if case .inode(let inode) = item { cachedSizes[inode] = nil }
        }
    }

    /// Counts an inode handed out and remembers the size it came with.
    func took(_ reply: EntryReply) {
        let inode = reply.attributes.inode
        guard inode != 0 else { return }
        lookups[inode, default: 0] += 1
        cachedSizes[inode] = Int64(reply.attributes.size)
    }

    /// Forgets every inode no descriptor holds, with all its lookups.
    private func forgetUnheld() {
        let held = Set(descriptors.values.map(\.inode))
        for (inode, count) in lookups where !held.contains(inode) {
            _ = try? request { $0.forget(inode: inode, count: count) }
            lookups[inode] = nil
            cachedSizes[inode] = nil
        }
    }

    /// Runs one system call, then lets the kernel evict what nothing holds.
    func syscall<T>(_ body: () throws -> T) throws -> T {
        defer { forgetUnheld() }
        return try body()
    }

    // MARK: Path walks

    private static func components(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    private static func checkName(_ name: String) throws {
        guard !name.isEmpty else { throw FileSystemError.notFound }
        guard name.utf8.count <= nameBytesMax else { throw FileSystemError.nameTooLong }
    }

    /// Looks `name` up in `parent`; nil for a negative entry.
    func lookup(_ parent: UInt64, _ name: String) throws -> EntryReply? {
        try Self.checkName(name)
        let reply = try request { try $0.lookup(parent: parent, name: name) }
        guard reply.attributes.inode != 0 else { return nil }
        took(reply)
        return reply
    }

    /// The directory holding `path`'s last component, and that component.
    func walkToParent(_ path: String) throws -> (parent: UInt64, name: String) {
        var parts = Self.components(path)
        guard let name = parts.popLast() else { throw FileSystemError.invalid }
        var inode: UInt64 = 1
        for part in parts {
            guard let reply = try lookup(inode, part) else { throw FileSystemError.notFound }
            guard reply.attributes.kind == .directory else { throw FileSystemError.notADirectory }
            inode = reply.attributes.inode
        }
        return (inode, name)
    }

    func resolve(_ path: String) throws -> EntryReply {
        if Self.components(path).isEmpty { return try rootEntry() }
        let (parent, name) = try walkToParent(path)
        guard let reply = try lookup(parent, name) else { throw FileSystemError.notFound }
        return reply
    }

    private func rootEntry() throws -> EntryReply {
        let attributes = try request { try $0.getAttributes(inode: 1, handle: nil) }.attributes
        return EntryReply(attributes: attributes, generation: 0, entryTimeoutSeconds: 0, attributeTimeoutSeconds: 0)
    }

    // MARK: Files

    /// `open(2)`: with `O_CREAT`, a create when the name is missing.
    func open(_ path: String, _ flags: Int32, mode: UInt32 = 0o644) throws -> Int32 {
        try syscall {
            let openFlags = OpenFlags(rawValue: flags)
            var inode: UInt64
            var handle: UInt64 = 0
            let (parent, name) = try walkToParent(path)
            if let existing = try lookup(parent, name) {
                if flags & O_CREAT != 0 && openFlags.exclusive { throw FileSystemError.exists }
                inode = existing.attributes.inode
                if existing.attributes.kind == .directory && openFlags.canWrite { throw FileSystemError.isADirectory }
                handle = try sendOpen(inode, openFlags)
                if openFlags.truncate && openFlags.canWrite {
                    // atomic_o_trunc is off: the truncation is its own setattr.
                    let reply = try request {
                        try $0.setAttributes(inode: inode, changes: AttributeChanges(size: 0), handle: handle)
                    }
                    cachedSizes[inode] = Int64(reply.attributes.size)
                }
            } else {
                guard flags & O_CREAT != 0 else { throw FileSystemError.notFound }
                let (entry, open) = try request(changingNamesIn: [parent]) {
                    try $0.create(parent: parent, name: name, mode: mode, flags: openFlags, context: context)
                }
                took(entry)
                inode = entry.attributes.inode
                handle = open.handle
            }
            let descriptor = nextDescriptor
            nextDescriptor += 1
            descriptors[descriptor] = Descriptor(inode: inode, handle: handle, flags: openFlags)
            return descriptor
        }
    }

    /// The open request, or none once the file system said it needs none.
    private func sendOpen(_ inode: UInt64, _ flags: OpenFlags) throws -> UInt64 {
        if learnedOpensAreSkipped { return 0 }
        let withoutTruncation = OpenFlags(rawValue: flags.rawValue & ~O_TRUNC)
        do {
            return try request { try $0.open(inode: inode, flags: withoutTruncation) }.handle
        } catch let error as FileSystemError where error.errno == ENOSYS {
            learnedOpensAreSkipped = true
            return 0
        }
    }

    private func descriptor(_ descriptor: Int32) throws -> Descriptor {
        guard let open = descriptors[descriptor] else { throw FileSystemError.badHandle }
        return open
    }

    /// `write(2)` at the descriptor's position (`O_APPEND`: at the cached size).
    @discardableResult
    func write(_ descriptor: Int32, _ text: String) throws -> Int {
        let open = try self.descriptor(descriptor)
        let offset = open.flags.append ? cachedSizes[open.inode] ?? 0 : open.position
        let written = try pwrite(descriptor, Data(text.utf8), at: offset)
        descriptors[descriptor]?.position = offset + Int64(written)
        return written
    }

    /// `pwrite(2)`.
    @discardableResult
    func pwrite(_ descriptor: Int32, _ data: Data, at offset: Int64) throws -> Int {
        let open = try self.descriptor(descriptor)
        guard open.flags.canWrite else { throw FileSystemError.badHandle }
        return try syscall {
            let written = try data.withUnsafeBytes { bytes in
                try request {
                    try $0.write(inode: open.inode, handle: open.handle, offset: offset, bytes: bytes, flags: open.flags)
                }
            }
            cachedSizes[open.inode] = max(cachedSizes[open.inode] ?? 0, offset + Int64(written))
            return written
        }
    }

    /// `pread(2)`, cut at the size the kernel cached (asked for when it has none).
    func pread(_ descriptor: Int32, count: Int, at offset: Int64) throws -> Data {
        let open = try self.descriptor(descriptor)
        return try syscall {
            if cachedSizes[open.inode] == nil { _ = try fstatInode(open.inode) }
            let wanted = min(Int64(count), max(0, (cachedSizes[open.inode] ?? 0) - offset))
            guard wanted > 0 else { return Data() }
            return try request {
                try $0.read(inode: open.inode, handle: open.handle, offset: offset, count: Int(wanted))
            }
        }
    }

    /// The whole file through `descriptor`, as `cat` reads it.
    func readAll(_ descriptor: Int32) throws -> String {
        let size = try fstat(descriptor).size
        return String(decoding: try pread(descriptor, count: Int(size), at: 0), as: UTF8.self)
    }

    /// `fstat(2)`: a getattr with no handle, as Linux sends it.
    func fstat(_ descriptor: Int32) throws -> FileAttributes {
        let open = try self.descriptor(descriptor)
        return try syscall { try fstatInode(open.inode) }
    }

    func fstatInode(_ inode: UInt64) throws -> FileAttributes {
        let attributes = try request { try $0.getAttributes(inode: inode, handle: nil) }.attributes
        cachedSizes[inode] = Int64(attributes.size)
        return attributes
    }

    func fsync(_ descriptor: Int32) throws {
        let open = try self.descriptor(descriptor)
        try syscall { try request { try $0.fsync(inode: open.inode, handle: open.handle, dataOnly: false) } }
    }

    /// `ftruncate(2)`: a setattr carrying the descriptor's handle.
    func ftruncate(_ descriptor: Int32, _ size: UInt64) throws {
        let open = try self.descriptor(descriptor)
        try syscall {
            let reply = try request {
                try $0.setAttributes(inode: open.inode, changes: AttributeChanges(size: size), handle: open.handle)
            }
            cachedSizes[open.inode] = Int64(reply.attributes.size)
        }
    }

    /// `close(2)`: a release when the file was opened with a request (no flush: none is registered).
    func close(_ descriptor: Int32) throws {
        let open = try self.descriptor(descriptor)
        descriptors[descriptor] = nil
        try syscall {
            if open.handle != 0 { try request { $0.release(inode: open.inode, handle: open.handle) } }
        }
    }
}
