import CFuse
import Foundation

/// The C callback table and the code that turns each kernel request into one
/// call of `FileSystemOperations` and exactly one reply.
///
/// Everything here is nonisolated and outside `main.swift` (PLATFORM.md: C
/// callbacks defined in top-level code crash on libfuse's worker threads).
/// Each callback copies the names and `fuse_file_info` fields it needs before
/// calling in, and `serve` guarantees one reply per request.
enum FuseCallbacks {
    /// Names longer than this many bytes are refused with ENAMETOOLONG.
    static let nameBytesMax = 255
    /// The largest readdir buffer answered at once.
    static let directoryBufferBytesMax = 1 << 20

    static func makeOperationTable() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, connection in FuseCallbacks.initialize(userdata, connection) }
        ops.lookup = { req, parent, name in FuseCallbacks.lookup(req, parent, name) }
        ops.forget = { req, inode, count in FuseCallbacks.forget(req, inode, count) }
        ops.forget_multi = { req, count, list in FuseCallbacks.forgetMany(req, count, list) }
        ops.getattr = { req, inode, fi in FuseCallbacks.getattr(req, inode, fi) }
        ops.setattr = { req, inode, attributes, toSet, fi in FuseCallbacks.setattr(req, inode, attributes, toSet, fi) }
        ops.readlink = { req, inode in FuseCallbacks.readlink(req, inode) }
        ops.mknod = { req, parent, name, mode, _ in FuseCallbacks.mknod(req, parent, name, mode) }
        ops.mkdir = { req, parent, name, mode in FuseCallbacks.mkdir(req, parent, name, mode) }
        ops.unlink = { req, parent, name in FuseCallbacks.unlink(req, parent, name) }
        ops.rmdir = { req, parent, name in FuseCallbacks.rmdir(req, parent, name) }
        ops.symlink = { req, target, parent, name in FuseCallbacks.symlink(req, target, parent, name) }
        ops.rename = { req, parent, name, newParent, newName, flags in
            FuseCallbacks.rename(req, parent, name, newParent, newName, flags)
        }
        ops.link = { req, inode, newParent, newName in FuseCallbacks.link(req, inode, newParent, newName) }
        ops.open = { req, inode, fi in FuseCallbacks.open(req, inode, fi) }
        ops.create = { req, parent, name, mode, fi in FuseCallbacks.create(req, parent, name, mode, fi) }
        ops.read = { req, inode, size, offset, fi in FuseCallbacks.read(req, inode, size, offset, fi) }
        ops.write = { req, inode, bytes, size, offset, fi in FuseCallbacks.write(req, inode, bytes, size, offset, fi) }
        // No flush callback: every write is committed before it returns, so
        // libfuse answers ENOSYS once and the kernel stops sending flush on
        // every close (one round trip less per file).
        ops.release = { req, inode, fi in FuseCallbacks.release(req, inode, fi) }
        ops.fsync = { req, inode, dataOnly, fi in FuseCallbacks.fsync(req, inode, dataOnly, fi) }
        ops.opendir = { req, inode, fi in FuseCallbacks.opendir(req, inode, fi) }
        ops.readdir = { req, inode, size, offset, fi in FuseCallbacks.readdir(req, inode, size, offset, fi, plus: false) }
        ops.readdirplus = { req, inode, size, offset, fi in
            FuseCallbacks.readdir(req, inode, size, offset, fi, plus: true)
        }
        ops.releasedir = { req, inode, fi in FuseCallbacks.releasedir(req, inode, fi) }
        ops.fsyncdir = { req, inode, dataOnly, fi in FuseCallbacks.fsyncdir(req, inode, dataOnly, fi) }
        ops.statfs = { req, inode in FuseCallbacks.statfs(req, inode) }
        ops.setxattr = { req, inode, name, value, size, flags in
            FuseCallbacks.setxattr(req, inode, name, value, size, flags)
        }
        ops.getxattr = { req, inode, name, size in FuseCallbacks.getxattr(req, inode, name, size) }
        ops.listxattr = { req, inode, size in FuseCallbacks.listxattr(req, inode, size) }
        ops.removexattr = { req, inode, name in FuseCallbacks.removexattr(req, inode, name) }
        return ops
    }

    /// Runs `body` and sends exactly one reply: its result, or the errno of what it threw.
    static func serve(
        _ req: fuse_req_t?, _ operation: StaticString, fileInfo: UnsafeMutablePointer<fuse_file_info>? = nil,
        changing directories: RequestMarker.Directories = RequestMarker.Directories(),
        _ body: (FuseDispatcher) throws -> Reply
    ) {
        guard let req else { return }
        guard let dispatcher = FuseDispatcher.of(req) else {
            _ = fuse_reply_err(req, EIO)
            return
        }
        let started = dispatcher.statistics == nil ? 0 : DispatchTime.now().uptimeNanoseconds
        defer {
            if let statistics = dispatcher.statistics {
                statistics.record(operation, nanoseconds: DispatchTime.now().uptimeNanoseconds &- started)
            }
        }
        let reply: Reply
        do {
            reply = try RequestMarker.serving(directories) { try body(dispatcher) }
        } catch {
            let code = dispatcher.operations.errorNumber(for: error)
            if code == EIO || code == ENOSPC {
                dispatcher.log.error("\(operation): \(error)")
            }
            reply = .error(code)
        }
        send(req, reply, fileInfo: fileInfo, log: dispatcher.log, operation: operation)
    }

    // MARK: Copying C input

    /// Copies a name from the kernel, refusing what cannot be a file's name here.
    static func copyName(_ pointer: UnsafePointer<CChar>?) throws -> String {
        guard let pointer else { throw FileSystemError.invalid }
        let length = strlen(pointer)
        guard length <= nameBytesMax else { throw FileSystemError.nameTooLong }
        guard length > 0 else { throw FileSystemError.notFound }
        guard let text = String(validatingCString: pointer) else { throw FileSystemError(EILSEQ) }
        return text
    }

    static func context(_ req: fuse_req_t) -> RequestContext {
        guard let context = fuse_req_ctx(req) else { return RequestContext(uid: 0, gid: 0, pid: 0, umask: 0o022) }
        return RequestContext(
            uid: context.pointee.uid, gid: context.pointee.gid, pid: context.pointee.pid,
            umask: context.pointee.umask)
    }

    /// The file handle, when the kernel passed file info.
    static func handle(_ fileInfo: UnsafeMutablePointer<fuse_file_info>?) -> UInt64? {
        cfuse_fi_has(fileInfo) != 0 ? cfuse_fi_fh(fileInfo) : nil
    }

    // MARK: The connection

    static func initialize(_ userdata: UnsafeMutableRawPointer?, _ connection: UnsafeMutablePointer<fuse_conn_info>?) {
        guard let userdata else { return }
        let dispatcher = Unmanaged<FuseDispatcher>.fromOpaque(userdata).takeUnretainedValue()
        var skipsOpens = false
        if let connection {
            let wanted = dispatcher.settings.skipsFileOpens
            skipsOpens = cfuse_conn_configure(connection, 1, wanted ? 1 : 0) != 0
            dispatcher.log.info(
                "FUSE connection: protocol \(connection.pointee.proto_major).\(connection.pointee.proto_minor), "
                    + "max_write \(connection.pointee.max_write), "
                    + (skipsOpens ? "no open/release requests for files" : "open/release requests for files"))
        }
        dispatcher.operations.connected(skipsOpens: skipsOpens)
    }
}

/// What libfuse's `userdata` points at: the operations, the settings and the log.
/// `Sendable` because every member is.
final class FuseDispatcher: Sendable {
    let operations: any FileSystemOperations
    let settings: FuseSettings
    let log: MountLog
    /// Per-opcode counts, only when profiling (`NOTESFS_OP_STATS=1`).
    let statistics: OperationStatistics?

    init(operations: any FileSystemOperations, settings: FuseSettings, log: MountLog) {
        self.operations = operations
        self.settings = settings
        self.log = log
        statistics = OperationStatistics.fromEnvironment()
        statistics?.startBurstLogging(to: log)
    }

    /// The dispatcher of a request's session; nil when libfuse passed none.
    static func of(_ req: fuse_req_t) -> FuseDispatcher? {
        guard let userdata = fuse_req_userdata(req) else { return nil }
        return Unmanaged<FuseDispatcher>.fromOpaque(userdata).takeUnretainedValue()
    }
}
