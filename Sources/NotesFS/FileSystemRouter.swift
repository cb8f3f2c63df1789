import Foundation
import FuseKit
import NotesStore

/// What the binding calls: sends each request to the file system that owns
/// it. Inodes of `.notesfs` (and the name `.notesfs` in the root) go to the
/// `ControlFileSystem`, everything else to the `NotesFileSystem`; both share
/// one `HandleTable`. A rename out of `.notesfs/trash` is a restore into the
/// notes (`FileSystemRouter+Trash.swift`).
public final class FileSystemRouter: FileSystemOperations {
    let notes: NotesFileSystem
    let control: ControlFileSystem

    init(notes: NotesFileSystem, control: ControlFileSystem) {
        self.notes = notes
        self.control = control
    }

    /// The two file systems over `tree`, sharing one handle table and `hooks`.
    convenience init(
        tree: NotesTree, inodes: InodeTable, folderAttributes: FolderAttributeCache, invalidations: InvalidationQueue,
        hooks: MountHooks, log: MountLog
    ) {
        let handles = HandleTable()
        self.init(
            notes: NotesFileSystem(
                tree: tree, inodes: inodes, handles: handles, folderAttributes: folderAttributes,
                invalidations: invalidations, hooks: hooks, log: log),
            control: ControlFileSystem(
                directory: ControlDirectory(tree: tree, hooks: hooks, log: log), handles: handles, tree: tree))
    }

    private static func isControl(_ inode: UInt64) -> Bool { ControlFileSystem.owns(inode) }

    private static func isControl(_ parent: UInt64, _ name: String) -> Bool {
        ControlFileSystem.owns(parent: parent, name: name)
    }

    public func errorNumber(for error: any Error) -> Int32 {
        ErrnoMapping.code(for: error)
    }

    public func connected(skipsOpens: Bool) {
        notes.handles.setOpensAreSkipped(skipsOpens)
        notes.invalidations.markConnected()
    }

    // MARK: Names and attributes

    public func lookup(parent: UInt64, name: String) throws -> EntryReply {
        if Self.isControl(parent, name) { return try control.lookup(parent: parent, name: name) }
        return try notes.lookup(parent: parent, name: name)
    }

    public func forget(inode: UInt64, count: UInt64) {
        // Control inodes are not counted.
        if !Self.isControl(inode) { notes.forget(inode: inode, count: count) }
    }

    public func getAttributes(inode: UInt64, handle: UInt64?) throws -> AttributeReply {
        let attributes =
            Self.isControl(inode)
            ? try control.getAttributes(inode: inode) : try notes.getAttributes(inode: inode, handle: handle)
        return AttributeReply(attributes: attributes, timeoutSeconds: CacheTimeouts.attributeSeconds(of: inode))
    }

    public func setAttributes(inode: UInt64, changes: AttributeChanges, handle: UInt64?) throws -> AttributeReply {
        let attributes =
            Self.isControl(inode)
            ? try control.setAttributes(inode: inode, changes: changes)
            : try notes.setAttributes(inode: inode, changes: changes, handle: handle)
        return AttributeReply(attributes: attributes, timeoutSeconds: CacheTimeouts.attributeSeconds(of: inode))
    }

    public func readLink(inode: UInt64) throws -> String {
        guard !Self.isControl(inode) else { throw FileSystemError.invalid }
        return try notes.readLink(inode: inode)
    }

    public func makeNode(parent: UInt64, name: String, mode: UInt32, context: RequestContext) throws -> EntryReply {
        if Self.isControl(parent, name) { try control.refuseChange(in: parent) }
        return try notes.makeNode(parent: parent, name: name, mode: mode, context: context)
    }

    public func makeDirectory(parent: UInt64, name: String, mode: UInt32, context: RequestContext) throws
        -> EntryReply
    {
        if Self.isControl(parent, name) { try control.makeDirectory(parent: parent) }
        return try notes.makeDirectory(parent: parent, name: name, mode: mode, context: context)
    }

    public func removeFile(parent: UInt64, name: String) throws {
        if Self.isControl(parent, name) { try control.refuseChange(in: parent) }
        try notes.removeFile(parent: parent, name: name)
    }

    public func removeDirectory(parent: UInt64, name: String) throws {
        if Self.isControl(parent, name) { try control.refuseChange(in: parent) }
        try notes.removeDirectory(parent: parent, name: name)
    }

    public func makeSymlink(parent: UInt64, name: String, target: String) throws -> EntryReply {
        if Self.isControl(parent, name) { try control.refuseChange(in: parent) }
        return try notes.makeSymlink(parent: parent, name: name, target: target)
    }

    public func rename(parent: UInt64, name: String, newParent: UInt64, newName: String, flags: RenameFlags) throws {
        guard Self.isControl(parent, name) || Self.isControl(newParent, newName) else {
            return try notes.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags)
        }
        try ControlFileSystem.refuseChangeInMoments(parent, newParent)
        try notes.checkRenameFlags(flags, name: name)
        if let source = control.directory.child(ofInode: parent, name: name), source.isInTrash {
            return try moveOutOfTrash(source, name: name, newParent: newParent, newName: newName)
        }
        throw FileSystemError.notPermitted
    }

    public func link(inode: UInt64, newParent: UInt64, newName: String) throws -> EntryReply {
        if Self.isControl(inode) || Self.isControl(newParent, newName) {
            try control.refuseChange(in: inode, newParent)
        }
        return try notes.link(inode: inode, newParent: newParent, newName: newName)
    }

    public func statistics(inode: UInt64) throws -> FileSystemStatistics {
        try notes.statistics(inode: inode)
    }

    // MARK: Files

    public func open(inode: UInt64, flags: OpenFlags) throws -> OpenReply {
        if Self.isControl(inode) { return try control.open(inode: inode, flags: flags) }
        return try notes.open(inode: inode, flags: flags)
    }

    public func create(parent: UInt64, name: String, mode: UInt32, flags: OpenFlags, context: RequestContext) throws
        -> (EntryReply, OpenReply)
    {
        if Self.isControl(parent, name) { try control.refuseChange(in: parent) }
        return try notes.create(parent: parent, name: name, mode: mode, flags: flags, context: context)
    }

    public func read(inode: UInt64, handle: UInt64, offset: Int64, count: Int) throws -> Data {
        if Self.isControl(inode) { return try control.read(inode: inode, handle: handle, offset: offset, count: count) }
        return try notes.read(inode: inode, handle: handle, offset: offset, count: count)
    }

    public func write(inode: UInt64, handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer, flags: OpenFlags)
        throws -> Int
    {
        if Self.isControl(inode) { try control.write(inode: inode, handle: handle) }
        return try notes.write(inode: inode, handle: handle, offset: offset, bytes: bytes, flags: flags)
    }

    public func release(inode: UInt64, handle: UInt64) {
        if Self.isControl(inode) { return control.release(handle: handle) }
        notes.release(inode: inode, handle: handle)
    }

    public func fsync(inode: UInt64, handle: UInt64, dataOnly: Bool) throws {
        // Control files hold nothing to make durable.
        if !Self.isControl(inode) { try notes.fsync(inode: inode, handle: handle, dataOnly: dataOnly) }
    }

    // MARK: Directories

    public func openDirectory(inode: UInt64) throws -> OpenReply {
        if Self.isControl(inode) { return try control.openDirectory(inode: inode) }
        return try notes.openDirectory(inode: inode)
    }

    public func readDirectory(
        inode: UInt64, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool
    ) throws {
        if Self.isControl(inode) { return try control.readDirectory(inode: inode, offset: offset, add: add) }
        try notes.readDirectory(inode: inode, handle: handle, offset: offset, plus: plus, add: add)
    }

    public func releaseDirectory(inode: UInt64, handle: UInt64) {
        notes.handles.close(handle)
    }

    public func fsyncDirectory(inode: UInt64, handle: UInt64, dataOnly: Bool) throws {
        try notes.fsyncDirectory(inode: inode, handle: handle, dataOnly: dataOnly)
    }

    // MARK: Extended attributes

    public func setExtendedAttribute(inode: UInt64, name: String, value: [UInt8], flags: Int32) throws {
        if Self.isControl(inode) { try control.setExtendedAttribute(inode: inode, name: name) }
        try notes.setExtendedAttribute(inode: inode, name: name, value: value, flags: flags)
    }

    public func extendedAttribute(inode: UInt64, name: String) throws -> [UInt8] {
        // Control files keep no attributes.
        guard !Self.isControl(inode) else { throw FileSystemError.noData }
        return try notes.extendedAttribute(inode: inode, name: name)
    }

    public func extendedAttributeNames(inode: UInt64) throws -> [String] {
        guard !Self.isControl(inode) else { return [] }
        return try notes.extendedAttributeNames(inode: inode)
    }

    public func removeExtendedAttribute(inode: UInt64, name: String) throws {
        if Self.isControl(inode) { return try control.removeExtendedAttribute(inode: inode, name: name) }
        try notes.removeExtendedAttribute(inode: inode, name: name)
    }
}
