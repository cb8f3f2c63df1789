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

    // MARK: Replies

    /// Every way a request can be answered.
    enum Reply {
        case error(Int32)
        case success
        case entry(EntryReply)
        case attributes(FileAttributes, timeoutSeconds: Double)
        case open(OpenReply)
        /// Opened a directory: the kernel caches its listing unless `directIO`,
        /// and keeps the listing cached at an earlier open when `keepCache`.
        case openDirectory(OpenReply)
        case create(EntryReply, OpenReply)
        case data(Data)
        case written(Int)
        case link(String)
        case statistics(FileSystemStatistics)
        case attributeSize(Int)
        case bytes([UInt8])
    }

    /// Runs `body` and sends exactly one reply: its result, or the errno of what it threw.
    static func serve(
        _ req: fuse_req_t?, _ operation: StaticString, fileInfo: UnsafeMutablePointer<fuse_file_info>? = nil,
        changing directories: RequestMarker.Directories = RequestMarker.Directories(),
        _ body: (FuseDispatcher) throws -> Reply
    ) {
        guard let req else { return }
        guard let userdata = fuse_req_userdata(req) else {
            _ = fuse_reply_err(req, EIO)
            return
        }
        let dispatcher = Unmanaged<FuseDispatcher>.fromOpaque(userdata).takeUnretainedValue()
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
            let code = ErrnoMapping.code(for: error)
            if code == EIO || code == ENOSPC {
                dispatcher.log.error("\(operation): \(error)")
            }
            reply = .error(code)
        }
        send(req, reply, fileInfo: fileInfo, log: dispatcher.log, operation: operation)
    }

    private static func send(
        _ req: fuse_req_t, _ reply: Reply, fileInfo: UnsafeMutablePointer<fuse_file_info>?, log: MountLog,
        operation: StaticString
    ) {
        switch reply {
        case .error(let code):
            _ = fuse_reply_err(req, code)
        case .success:
            _ = fuse_reply_err(req, 0)
        case .entry(let entry):
            var parameter = entryParameter(entry)
            _ = fuse_reply_entry(req, &parameter)
        case .attributes(let attributes, let timeout):
            var status = statBuffer(attributes)
            _ = fuse_reply_attr(req, &status, timeout)
        case .open(let open):
            guard let fileInfo else {
                log.error("\(operation): open reply without file info")
                _ = fuse_reply_err(req, EIO)
                return
            }
            cfuse_fi_set_open(fileInfo, open.handle, open.keepCache ? 1 : 0, open.directIO ? 1 : 0)
            _ = fuse_reply_open(req, fileInfo)
        case .openDirectory(let open):
            guard let fileInfo else {
                log.error("\(operation): opendir reply without file info")
                _ = fuse_reply_err(req, EIO)
                return
            }
            // Control directories answer with directIO set: no listing cache.
            cfuse_fi_set_dir(fileInfo, open.handle, open.directIO ? 0 : 1, open.keepCache ? 1 : 0)
            _ = fuse_reply_open(req, fileInfo)
        case .create(let entry, let open):
            guard let fileInfo else {
                log.error("\(operation): create reply without file info")
                _ = fuse_reply_err(req, EIO)
                return
            }
            cfuse_fi_set_open(fileInfo, open.handle, open.keepCache ? 1 : 0, open.directIO ? 1 : 0)
            var parameter = entryParameter(entry)
            _ = fuse_reply_create(req, &parameter, fileInfo)
        case .data(let data):
            data.withUnsafeBytes { buffer in
                _ = fuse_reply_buf(req, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), buffer.count)
            }
        case .bytes(let bytes):
            bytes.withUnsafeBytes { buffer in
                _ = fuse_reply_buf(req, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), buffer.count)
            }
        case .written(let count):
            _ = fuse_reply_write(req, count)
        case .link(let target):
            _ = target.withCString { fuse_reply_readlink(req, $0) }
        case .statistics(let statistics):
            var buffer = statvfs()
            buffer.f_bsize = UInt(statistics.blockSize)
            buffer.f_frsize = UInt(statistics.blockSize)
            buffer.f_blocks = fsblkcnt_t(statistics.totalBlocks)
            buffer.f_bfree = fsblkcnt_t(statistics.freeBlocks)
            buffer.f_bavail = fsblkcnt_t(statistics.availableBlocks)
            buffer.f_files = fsfilcnt_t(statistics.totalFiles)
            buffer.f_ffree = fsfilcnt_t(statistics.freeFiles)
            buffer.f_favail = fsfilcnt_t(statistics.freeFiles)
            buffer.f_namemax = UInt(statistics.nameMax)
            _ = fuse_reply_statfs(req, &buffer)
        case .attributeSize(let size):
            _ = fuse_reply_xattr(req, size)
        }
    }

    static func entryParameter(_ entry: EntryReply) -> fuse_entry_param {
        fuse_entry_param(
            ino: entry.attributes.inode, generation: entry.generation, attr: statBuffer(entry.attributes),
            attr_timeout: entry.attributeTimeoutSeconds, entry_timeout: entry.entryTimeoutSeconds)
    }

    static func statBuffer(_ attributes: FileAttributes) -> stat {
        var status = stat()
        status.st_ino = UInt(truncatingIfNeeded: attributes.inode)
        let type: UInt32
        switch attributes.kind {
        case .directory: type = S_IFDIR
        case .regular: type = S_IFREG
        case .symlink: type = S_IFLNK
        }
        status.st_mode = type | (attributes.permissions & 0o7777)
        status.st_nlink = UInt(attributes.linkCount)
        status.st_uid = attributes.uid
        status.st_gid = attributes.gid
        status.st_size = off_t(clamping: attributes.size)
        // The write size programs pick (stdio buffers, `cp`, editors): each
        // write is a request and a commit, so 128 KiB, not a page.
        status.st_blksize = 128 << 10
        status.st_blocks = blkcnt_t(clamping: (attributes.size + 511) / 512)
        status.st_atim = timespec(nanoseconds: attributes.accessTimeNanoseconds)
        status.st_mtim = timespec(nanoseconds: attributes.modificationTimeNanoseconds)
        status.st_ctim = timespec(nanoseconds: attributes.changeTimeNanoseconds)
        return status
    }

    // MARK: Copying C input

    /// Copies a name from the kernel, refusing what cannot be a note's name.
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

    // MARK: Callbacks

    /// `NOTESFS_OPEN_REQUESTS=1` keeps open/release requests for files (for
    /// comparison and debugging); by default the kernel skips them.
    static let openRequestsVariable = "NOTESFS_OPEN_REQUESTS"

    static func initialize(_ userdata: UnsafeMutableRawPointer?, _ connection: UnsafeMutablePointer<fuse_conn_info>?) {
        guard let userdata else { return }
        let dispatcher = Unmanaged<FuseDispatcher>.fromOpaque(userdata).takeUnretainedValue()
        var skipsOpens = false
        if let connection {
            let wanted = ProcessInfo.processInfo.environment[Self.openRequestsVariable] != "1"
            skipsOpens = cfuse_conn_configure(connection, 1, wanted ? 1 : 0) != 0
            dispatcher.log.info(
                "FUSE connection: protocol \(connection.pointee.proto_major).\(connection.pointee.proto_minor), "
                    + "max_write \(connection.pointee.max_write), "
                    + (skipsOpens ? "no open/release requests for files" : "open/release requests for files"))
        }
        dispatcher.operations.connected(skipsOpens: skipsOpens)
    }

    static func lookup(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "lookup") { dispatcher in
            let name = try copyName(namePointer)
            return .entry(try dispatcher.operations.lookup(parent: parent, name: name))
        }
    }

    static func forget(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ count: UInt64) {
        guard let req else { return }
        if let userdata = fuse_req_userdata(req) {
            let dispatcher = Unmanaged<FuseDispatcher>.fromOpaque(userdata).takeUnretainedValue()
            dispatcher.operations.forget(inode: inode, count: count)
        }
        fuse_reply_none(req)
    }

    static func forgetMany(_ req: fuse_req_t?, _ count: Int, _ list: UnsafeMutablePointer<fuse_forget_data>?) {
        guard let req else { return }
        if let userdata = fuse_req_userdata(req), let list, count > 0 {
            let dispatcher = Unmanaged<FuseDispatcher>.fromOpaque(userdata).takeUnretainedValue()
            for item in UnsafeBufferPointer(start: list, count: count) {
                dispatcher.operations.forget(inode: item.ino, count: item.nlookup)
            }
        }
        fuse_reply_none(req)
    }

    static func getattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        let fileHandle = handle(fileInfo)
        serve(req, "getattr") { dispatcher in
            let attributes = try dispatcher.operations.getAttributes(inode: inode, handle: fileHandle)
            return .attributes(attributes, timeoutSeconds: CacheTimeouts.attributeSeconds(of: inode))
        }
    }

    static func setattr(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ attributes: UnsafeMutablePointer<stat>?, _ toSet: Int32,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = handle(fileInfo)
        var changes = AttributeChanges()
        if let attributes {
            let status = attributes.pointee
            if toSet & FUSE_SET_ATTR_MODE != 0 { changes.permissions = status.st_mode & 0o7777 }
            if toSet & FUSE_SET_ATTR_UID != 0 { changes.uid = status.st_uid }
            if toSet & FUSE_SET_ATTR_GID != 0 { changes.gid = status.st_gid }
            if toSet & FUSE_SET_ATTR_SIZE != 0 { changes.size = UInt64(clamping: status.st_size) }
            if toSet & FUSE_SET_ATTR_ATIME_NOW != 0 {
                changes.accessTime = .now
            } else if toSet & FUSE_SET_ATTR_ATIME != 0 {
                changes.accessTime = .nanoseconds(status.st_atim.nanosecondsSince1970)
            }
            if toSet & FUSE_SET_ATTR_MTIME_NOW != 0 {
                changes.modificationTime = .now
            } else if toSet & FUSE_SET_ATTR_MTIME != 0 {
                changes.modificationTime = .nanoseconds(status.st_mtim.nanosecondsSince1970)
            }
        }
        serve(req, "setattr") { dispatcher in
            let result = try dispatcher.operations.setAttributes(inode: inode, changes: changes, handle: fileHandle)
            return .attributes(result, timeoutSeconds: CacheTimeouts.attributeSeconds(of: inode))
        }
    }

    static func readlink(_ req: fuse_req_t?, _ inode: fuse_ino_t) {
        serve(req, "readlink") { dispatcher in .link(try dispatcher.operations.readLink(inode: inode)) }
    }

    static func mknod(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ mode: mode_t) {
        serve(req, "mknod", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            let context = req.map(context) ?? RequestContext(uid: 0, gid: 0, pid: 0, umask: 0)
            return .entry(try dispatcher.operations.makeNode(parent: parent, name: name, mode: mode, context: context))
        }
    }

    static func mkdir(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ mode: mode_t) {
        serve(req, "mkdir", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            let context = req.map(context) ?? RequestContext(uid: 0, gid: 0, pid: 0, umask: 0)
            return .entry(
                try dispatcher.operations.makeDirectory(parent: parent, name: name, mode: mode, context: context))
        }
    }

    static func unlink(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "unlink", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            try dispatcher.operations.removeFile(parent: parent, name: try copyName(namePointer))
            return .success
        }
    }

    static func rmdir(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "rmdir", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            try dispatcher.operations.removeDirectory(parent: parent, name: try copyName(namePointer))
            return .success
        }
    }

    static func symlink(
        _ req: fuse_req_t?, _ targetPointer: UnsafePointer<CChar>?, _ parent: fuse_ino_t,
        _ namePointer: UnsafePointer<CChar>?
    ) {
        serve(req, "symlink", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            guard let targetPointer, let target = String(validatingCString: targetPointer) else {
                throw FileSystemError.invalid
            }
            return .entry(try dispatcher.operations.makeSymlink(parent: parent, name: name, target: target))
        }
    }

    static func rename(
        _ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ newParent: fuse_ino_t,
        _ newNamePointer: UnsafePointer<CChar>?, _ flags: UInt32
    ) {
        serve(req, "rename", changing: RequestMarker.Directories(first: parent, second: newParent)) { dispatcher in
            let name = try copyName(namePointer)
            let newName = try copyName(newNamePointer)
            try dispatcher.operations.rename(
                parent: parent, name: name, newParent: newParent, newName: newName,
                flags: RenameFlags(rawValue: flags))
            return .success
        }
    }

    static func link(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ newParent: fuse_ino_t, _ newNamePointer: UnsafePointer<CChar>?
    ) {
        serve(req, "link", changing: RequestMarker.Directories(first: newParent)) { dispatcher in
            let newName = try copyName(newNamePointer)
            return .entry(try dispatcher.operations.link(inode: inode, newParent: newParent, newName: newName))
        }
    }

    static func open(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        let flags = OpenFlags(rawValue: cfuse_fi_flags(fileInfo))
        serve(req, "open", fileInfo: fileInfo) { dispatcher in
            .open(try dispatcher.operations.open(inode: inode, flags: flags))
        }
    }

    static func create(
        _ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ mode: mode_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let flags = OpenFlags(rawValue: cfuse_fi_flags(fileInfo))
        serve(req, "create", fileInfo: fileInfo, changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            let context = req.map(context) ?? RequestContext(uid: 0, gid: 0, pid: 0, umask: 0)
            let (entry, open) = try dispatcher.operations.create(
                parent: parent, name: name, mode: mode, flags: flags, context: context)
            return .create(entry, open)
        }
    }

    static func read(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "read") { dispatcher in
            guard offset >= 0, size >= 0 else { throw FileSystemError.invalid }
            return .data(try dispatcher.operations.read(inode: inode, handle: fileHandle, offset: Int64(offset), count: size))
        }
    }

    static func write(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ bytes: UnsafePointer<CChar>?, _ size: Int, _ offset: off_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        // libfuse copies the descriptor's flags (O_APPEND among them) into
        // every write, with or without open requests.
        let flags = OpenFlags(rawValue: cfuse_fi_flags(fileInfo))
        serve(req, "write") { dispatcher in
            guard offset >= 0, size >= 0 else { throw FileSystemError.invalid }
            let buffer = UnsafeRawBufferPointer(start: bytes.map { UnsafeRawPointer($0) }, count: bytes == nil ? 0 : size)
            return .written(
                try dispatcher.operations.write(
                    inode: inode, handle: fileHandle, offset: Int64(offset), bytes: buffer, flags: flags))
        }
    }

    static func flush(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "flush") { dispatcher in
            try dispatcher.operations.flush(inode: inode, handle: fileHandle)
            return .success
        }
    }

    static func release(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "release") { dispatcher in
            dispatcher.operations.release(inode: inode, handle: fileHandle)
            return .success
        }
    }

    static func fsync(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ dataOnly: Int32, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "fsync") { dispatcher in
            try dispatcher.operations.fsync(inode: inode, handle: fileHandle, dataOnly: dataOnly != 0)
            return .success
        }
    }

    static func opendir(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        serve(req, "opendir", fileInfo: fileInfo) { dispatcher in
            .openDirectory(try dispatcher.operations.openDirectory(inode: inode))
        }
    }

    static func readdir(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?, plus: Bool
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, plus ? "readdirplus" : "readdir") { dispatcher in
            guard let req, offset >= 0 else { throw FileSystemError.invalid }
            let capacity = min(max(size, 0), directoryBufferBytesMax)
            // Filled in place and handed to the reply as it is: zeroing the
            // kernel's buffer (32 KiB for `find`), then copying the used part
            // byte by byte, cost more than the entries themselves.
            let buffer = try [UInt8](unsafeUninitializedCapacity: capacity) { storage, initialized in
                initialized = 0
                guard let bytes = storage.baseAddress, capacity > 0 else { return }
                let base = UnsafeMutableRawPointer(bytes).assumingMemoryBound(to: CChar.self)
                var used = 0
                defer { initialized = used }
                try dispatcher.operations.readDirectory(
                    inode: inode, handle: fileHandle, offset: Int64(offset), plus: plus
                ) { entry in
                    let remaining = capacity - used
                    let needed: Int = entry.name.withCString { name in
                        if plus, let reply = entry.reply {
                            var parameter = entryParameter(reply)
                            return fuse_add_direntry_plus(
                                req, base + used, remaining, name, &parameter, off_t(entry.offset))
                        }
                        if plus {
                            // `.` and `..`: an entry with inode 0 is not looked up by the kernel.
                            var parameter = fuse_entry_param()
                            parameter.attr = statBuffer(entry.attributes)
                            parameter.ino = 0
                            return fuse_add_direntry_plus(
                                req, base + used, remaining, name, &parameter, off_t(entry.offset))
                        }
                        var status = statBuffer(entry.attributes)
                        return fuse_add_direntry(req, base + used, remaining, name, &status, off_t(entry.offset))
                    }
                    guard needed <= remaining else { return false }
                    used += needed
                    return true
                }
            }
            return .bytes(buffer)
        }
    }

    static func releasedir(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?)
    {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "releasedir") { dispatcher in
            dispatcher.operations.releaseDirectory(inode: inode, handle: fileHandle)
            return .success
        }
    }

    static func fsyncdir(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ dataOnly: Int32, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "fsyncdir") { dispatcher in
            try dispatcher.operations.fsyncDirectory(inode: inode, handle: fileHandle, dataOnly: dataOnly != 0)
            return .success
        }
    }

    static func statfs(_ req: fuse_req_t?, _ inode: fuse_ino_t) {
        serve(req, "statfs") { dispatcher in .statistics(try dispatcher.operations.statistics(inode: inode)) }
    }

    static func setxattr(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?,
        _ valuePointer: UnsafePointer<CChar>?, _ size: Int, _ flags: Int32
    ) {
        serve(req, "setxattr") { dispatcher in
            guard let namePointer, let name = String(validatingCString: namePointer) else {
                throw FileSystemError.invalid
            }
            var value: [UInt8] = []
            if let valuePointer, size > 0 {
                value = Array(UnsafeRawBufferPointer(start: valuePointer, count: size))
            }
            try dispatcher.operations.setExtendedAttribute(inode: inode, name: name, value: value, flags: flags)
            return .success
        }
    }

    /// The only attribute names that have values (`user.notesfs.*`).
    static let ownAttributePrefix: StaticString = "user.notesfs."
    /// The one namespace this file system keeps attributes in.
    static let userNamespacePrefix: StaticString = "user."

    static func hasPrefix(_ name: UnsafePointer<CChar>, _ prefix: StaticString) -> Bool {
        let bytes = UnsafeRawPointer(prefix.utf8Start).assumingMemoryBound(to: CChar.self)
        return strncmp(name, bytes, prefix.utf8CodeUnitCount) == 0
    }

    static func getxattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ size: Int) {
        // Names we keep nothing under are answered here, before any Swift
        // string or error is made: the kernel asks for security.capability
        // before the first write of each file, and `ls -l` for
        // security.selinux and system.posix_acl_access per file.
        // Namespaces other than `user.` are not supported at all (EOPNOTSUPP,
        // as DESIGN says): `ls` then remembers, per device, that there are no
        // ACLs or SELinux labels and stops asking — a round trip per file and
        // attribute that the kernel never caches for FUSE. A missing `user.`
        // name is ENODATA: that namespace is supported.
        if let req, let namePointer, !hasPrefix(namePointer, ownAttributePrefix) {
            if let userdata = fuse_req_userdata(req),
                let statistics = Unmanaged<FuseDispatcher>.fromOpaque(userdata).takeUnretainedValue().statistics
            {
                statistics.record("getxattr (other)", nanoseconds: 0)
            }
            _ = fuse_reply_err(req, hasPrefix(namePointer, userNamespacePrefix) ? ENODATA : EOPNOTSUPP)
            return
        }
        serve(req, "getxattr") { dispatcher in
            guard let namePointer, let name = String(validatingCString: namePointer) else {
                throw FileSystemError.noData
            }
            let value = try dispatcher.operations.extendedAttribute(inode: inode, name: name)
            if size == 0 { return .attributeSize(value.count) }
            guard value.count <= size else { throw FileSystemError.range }
            return .bytes(value)
        }
    }

    static func listxattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int) {
        serve(req, "listxattr") { dispatcher in
            let names = try dispatcher.operations.extendedAttributeNames(inode: inode)
            let bytes: [UInt8] = names.flatMap { name -> [UInt8] in Array(name.utf8) + [0] }
            if size == 0 { return .attributeSize(bytes.count) }
            guard bytes.count <= size else { throw FileSystemError.range }
            return .bytes(bytes)
        }
    }

    static func removexattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "removexattr") { dispatcher in
            guard let namePointer, let name = String(validatingCString: namePointer) else {
                throw FileSystemError.noData
            }
            try dispatcher.operations.removeExtendedAttribute(inode: inode, name: name)
            return .success
        }
    }
}

extension timespec {
    init(nanoseconds: Int64) {
        let seconds = nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds - 999_999_999) / 1_000_000_000
        self.init(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds - seconds * 1_000_000_000))
    }

    var nanosecondsSince1970: Int64 {
        Int64(tv_sec).multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ Int64(tv_nsec)
    }
}
