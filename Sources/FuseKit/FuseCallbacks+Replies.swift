import CFuse
import Foundation

// Replies: every way a request is answered, and the C structures they fill.
extension FuseCallbacks {
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

    static func send(
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
