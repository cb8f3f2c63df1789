import Foundation

/// The file-system operations the FUSE binding dispatches to, in Swift terms.
///
/// The binding (`FuseSession`) owns every C detail: it copies names and
/// `fuse_file_info` fields before calling in, and replies to the kernel exactly
/// once with what a method returns or throws. A method that throws is answered
/// with `ErrnoMapping.code(for:)` of the error. Methods are called on libfuse's
/// worker threads, several at a time, so implementations must be thread-safe.
public protocol FileSystemOperations: AnyObject, Sendable {
    func lookup(parent: UInt64, name: String) throws -> EntryReply
    /// The kernel dropped `count` references to `inode` (no reply).
    func forget(inode: UInt64, count: UInt64)
    func getAttributes(inode: UInt64, handle: UInt64?) throws -> FileAttributes
    func setAttributes(inode: UInt64, changes: AttributeChanges, handle: UInt64?) throws -> FileAttributes
    func readLink(inode: UInt64) throws -> String
    func makeNode(parent: UInt64, name: String, mode: UInt32, context: RequestContext) throws -> EntryReply
    func makeDirectory(parent: UInt64, name: String, mode: UInt32, context: RequestContext) throws -> EntryReply
    func removeFile(parent: UInt64, name: String) throws
    func removeDirectory(parent: UInt64, name: String) throws
    func makeSymlink(parent: UInt64, name: String, target: String) throws -> EntryReply
    func rename(parent: UInt64, name: String, newParent: UInt64, newName: String, flags: RenameFlags) throws
    func link(inode: UInt64, newParent: UInt64, newName: String) throws -> EntryReply
    func open(inode: UInt64, flags: OpenFlags) throws -> OpenReply
    func create(parent: UInt64, name: String, mode: UInt32, flags: OpenFlags, context: RequestContext) throws
        -> (EntryReply, OpenReply)
    /// Returns at most `count` bytes from `offset`; fewer only at the end of the file.
    func read(inode: UInt64, handle: UInt64, offset: Int64, count: Int) throws -> Data
    /// Stores `bytes` (valid only during the call) and returns how many were written.
    /// `flags` are the writing descriptor's (the kernel sends them with every write).
    func write(inode: UInt64, handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer, flags: OpenFlags) throws
        -> Int
    func flush(inode: UInt64, handle: UInt64) throws
    func release(inode: UInt64, handle: UInt64)
    func fsync(inode: UInt64, handle: UInt64, dataOnly: Bool) throws
    /// Opens a directory. The reply's `keepCache` lets the kernel cache the
    /// listing and keep the listing it cached at an earlier open.
    func openDirectory(inode: UInt64) throws -> OpenReply
    /// Lists entries after `offset` (0 = from the start; otherwise the `offset`
    /// of the last entry already returned). `add` returns false when the
    /// kernel's buffer is full; an entry for which it returned false was not
    /// sent. With `plus`, every entry accepted (other than `.` and `..`) counts
    /// as a lookup of its inode.
    func readDirectory(
        inode: UInt64, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool
    ) throws
    func releaseDirectory(inode: UInt64, handle: UInt64)
    func fsyncDirectory(inode: UInt64, handle: UInt64, dataOnly: Bool) throws
    func statistics(inode: UInt64) throws -> FileSystemStatistics
    func setExtendedAttribute(inode: UInt64, name: String, value: [UInt8], flags: Int32) throws
    func extendedAttribute(inode: UInt64, name: String) throws -> [UInt8]
    /// The attribute names (without their NUL separators).
    func extendedAttributeNames(inode: UInt64) throws -> [String]
    func removeExtendedAttribute(inode: UInt64, name: String) throws
    /// Called once when the kernel connection is up (notifications may be sent
    /// after it). With `skipsOpens`, the file system answers `open` of a file
    /// with ENOSYS and the kernel then opens files without asking (no open,
    /// no release, handle 0, pages kept).
    func connected(skipsOpens: Bool)
}

/// An error that already is an errno value, for the binding to send as it is.
public struct FileSystemError: Error, Equatable, CustomStringConvertible {
    public let errno: Int32

    public init(_ errno: Int32) { self.errno = errno }

    public var description: String { "errno \(errno) (\(String(cString: strerror(errno))))" }

    public static let notFound = FileSystemError(ENOENT)
    public static let exists = FileSystemError(EEXIST)
    public static let notPermitted = FileSystemError(EPERM)
    public static let notSupported = FileSystemError(EOPNOTSUPP)
    public static let noData = FileSystemError(ENODATA)
    public static let invalid = FileSystemError(EINVAL)
    public static let accessDenied = FileSystemError(EACCES)
    public static let notADirectory = FileSystemError(ENOTDIR)
    public static let isADirectory = FileSystemError(EISDIR)
    public static let badHandle = FileSystemError(EBADF)
    public static let nameTooLong = FileSystemError(ENAMETOOLONG)
    public static let range = FileSystemError(ERANGE)
    public static let io = FileSystemError(EIO)
}

/// What kind of thing an inode is.
public enum FileKind: Sendable, Equatable {
    case directory
    case regular
    case symlink
}

/// Attributes for `stat`. Times are nanoseconds since 1970.
public struct FileAttributes: Sendable, Equatable {
    public var inode: UInt64
    public var kind: FileKind
    public var size: UInt64
    /// Permission bits only (0o7777).
    public var permissions: UInt32
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var accessTimeNanoseconds: Int64
    public var modificationTimeNanoseconds: Int64
    public var changeTimeNanoseconds: Int64

    public init(
        inode: UInt64, kind: FileKind, size: UInt64, permissions: UInt32, linkCount: UInt32 = 1,
        uid: UInt32, gid: UInt32, accessTimeNanoseconds: Int64, modificationTimeNanoseconds: Int64,
        changeTimeNanoseconds: Int64
    ) {
        self.inode = inode
        self.kind = kind
        self.size = size
        self.permissions = permissions
        self.linkCount = linkCount
        self.uid = uid
        self.gid = gid
        self.accessTimeNanoseconds = accessTimeNanoseconds
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
        self.changeTimeNanoseconds = changeTimeNanoseconds
    }
}

/// A reply to lookup, create, mkdir and readdirplus: the inode and how long the
/// kernel may cache the name and the attributes.
public struct EntryReply: Sendable {
    public var attributes: FileAttributes
    public var generation: UInt64
    public var entryTimeoutSeconds: Double
    public var attributeTimeoutSeconds: Double

    public init(
        attributes: FileAttributes, generation: UInt64, entryTimeoutSeconds: Double, attributeTimeoutSeconds: Double
    ) {
        self.attributes = attributes
        self.generation = generation
        self.entryTimeoutSeconds = entryTimeoutSeconds
        self.attributeTimeoutSeconds = attributeTimeoutSeconds
    }
}

/// The reply to open and create.
public struct OpenReply: Sendable {
    public var handle: UInt64
    /// The kernel may keep the pages it cached for this inode (the content did not change).
    public var keepCache: Bool
    /// Bypass the page cache (used for generated control files).
    public var directIO: Bool

    public init(handle: UInt64, keepCache: Bool, directIO: Bool) {
        self.handle = handle
        self.keepCache = keepCache
        self.directIO = directIO
    }
}

/// One directory entry for readdir; `reply` is filled for readdirplus.
public struct DirectoryEntry {
    public var name: String
    public var attributes: FileAttributes
    /// The offset the kernel passes back to continue after this entry (> 0).
    public var offset: Int64
    public var reply: EntryReply?

    public init(name: String, attributes: FileAttributes, offset: Int64, reply: EntryReply?) {
        self.name = name
        self.attributes = attributes
        self.offset = offset
        self.reply = reply
    }
}

/// `setattr`'s requested changes; nil leaves a value alone.
public struct AttributeChanges: Sendable, Equatable {
    public enum Time: Sendable, Equatable {
        case now
        case nanoseconds(Int64)
    }

    public var permissions: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: UInt64?
    public var accessTime: Time?
    public var modificationTime: Time?

    public init(
        permissions: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: UInt64? = nil,
        accessTime: Time? = nil, modificationTime: Time? = nil
    ) {
        self.permissions = permissions
        self.uid = uid
        self.gid = gid
        self.size = size
        self.accessTime = accessTime
        self.modificationTime = modificationTime
    }
}

/// `open(2)` flags as the kernel passed them.
public struct OpenFlags: Sendable, Equatable {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    public var accessMode: Int32 { rawValue & O_ACCMODE }
    public var canWrite: Bool { accessMode == O_WRONLY || accessMode == O_RDWR }
    public var truncate: Bool { rawValue & O_TRUNC != 0 }
    public var append: Bool { rawValue & O_APPEND != 0 }
    public var exclusive: Bool { rawValue & O_EXCL != 0 }
}

/// `renameat2(2)` flags.
public struct RenameFlags: Sendable, Equatable {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let noReplace: UInt32 = 1
    public static let exchange: UInt32 = 2

    public var noReplace: Bool { rawValue & Self.noReplace != 0 }
    public var exchange: Bool { rawValue & Self.exchange != 0 }
}

/// Who made a request.
public struct RequestContext: Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    public var umask: UInt32

    public init(uid: UInt32, gid: UInt32, pid: Int32, umask: UInt32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.umask = umask
    }
}

/// What `statfs` reports.
public struct FileSystemStatistics: Sendable {
    public var blockSize: UInt64
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    public var availableBlocks: UInt64
    public var totalFiles: UInt64
    public var freeFiles: UInt64
    public var nameMax: UInt64

    public init(
        blockSize: UInt64, totalBlocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64, totalFiles: UInt64,
        freeFiles: UInt64, nameMax: UInt64
    ) {
        self.blockSize = blockSize
        self.totalBlocks = totalBlocks
        self.freeBlocks = freeBlocks
        self.availableBlocks = availableBlocks
        self.totalFiles = totalFiles
        self.freeFiles = freeFiles
        self.nameMax = nameMax
    }
}
