import Foundation

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

/// A reply to getattr and setattr: the attributes and how long the kernel may cache them.
public struct AttributeReply: Sendable, Equatable {
    public var attributes: FileAttributes
    public var timeoutSeconds: Double

    public init(attributes: FileAttributes, timeoutSeconds: Double) {
        self.attributes = attributes
        self.timeoutSeconds = timeoutSeconds
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
