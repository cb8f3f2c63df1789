import Foundation

/// The file-system operations the FUSE binding dispatches to, in Swift terms.
///
/// The binding (`FuseSession`) owns every C detail: it copies names and
/// `fuse_file_info` fields before calling in, and replies to the kernel exactly
/// once with what a method returns or throws. A method that throws is answered
/// with `errorNumber(for:)` of the error. Methods are called on libfuse's
/// worker threads, several at a time, so implementations must be thread-safe.
public protocol FileSystemOperations: AnyObject, Sendable {
    /// The errno a request that threw `error` is answered with: the file
    /// system's one mapping of its own errors (a `FileSystemError` is its errno).
    func errorNumber(for error: any Error) -> Int32
    func lookup(parent: UInt64, name: String) throws -> EntryReply
    /// The kernel dropped `count` references to `inode` (no reply).
    func forget(inode: UInt64, count: UInt64)
    func getAttributes(inode: UInt64, handle: UInt64?) throws -> AttributeReply
    func setAttributes(inode: UInt64, changes: AttributeChanges, handle: UInt64?) throws -> AttributeReply
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
