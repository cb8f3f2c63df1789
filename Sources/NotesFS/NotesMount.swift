import Foundation
import FuseKit
import NotesStore
import Synchronization

/// One mounted notes tree: the store shown through FUSE, with the kernel's
/// caches invalidated whenever the store changes behind the kernel's back.
///
/// The `notesfs mount` command runs one in the foreground process; tests may
/// run one inside their own process to change the store directly.
public final class NotesMount: Sendable {
    public let tree: NotesTree
    public let mountpoint: String
    let router: FileSystemRouter
    let mounter: Mounter
    let invalidations: InvalidationQueue
    private let observerID: Int
    private let log: MountLog

    /// `sourceName` is what `mount` and `/proc/self/mountinfo` show as the source
    /// (`notesfs:<data directory>` lets `notesfs unmount` find the process).
    public init(tree: NotesTree, mountpoint: String, log: MountLog, sourceName: String = "notesfs") throws {
        self.tree = tree
        self.mountpoint = mountpoint
        self.log = log
        // Built in the order each part needs the one before; the
        // invalidation thread gets the mounter to send through at `mount()`.
        let inodes = InodeTable()
        let folderAttributes = FolderAttributeCache()
        let externalChanges = ExternalChangeWatch(tree: tree, inodes: inodes, folderAttributes: folderAttributes, log: log)
        _ = externalChanges.check()  // the baseline, before anything is served
        let delay = InvalidationQueue.delayFromEnvironment()
        if delay > 0 { log.warning("holding each kernel invalidation \(delay) s (\(InvalidationQueue.delayVariable), for tests)") }
        invalidations = InvalidationQueue(log: log, delaySeconds: delay, tick: { externalChanges.check() })
        router = FileSystemRouter(
            tree: tree, inodes: inodes, folderAttributes: folderAttributes, invalidations: invalidations,
            hooks: MountHooks(), log: log)
        let safeSource = sourceName.contains(",") || sourceName.contains("\\") ? "notesfs" : sourceName
        let settings = FuseSettings(
            skipsFileOpens: ProcessInfo.processInfo.environment[Self.openRequestsVariable] != "1",
            attributeFilter: NotesFileSystem.attributeFilter)
        mounter = try Mounter(
            mountpoint: mountpoint, operations: router, settings: settings, log: log,
            options: ["fsname=\(safeSource)", "subtype=notesfs", "default_permissions"])
        observerID = Self.observe(tree, fileSystem: router.notes, invalidations: invalidations)
    }

    /// `NOTESFS_OPEN_REQUESTS=1` keeps open/release requests for files (for
    /// comparison and debugging); by default the kernel skips them.
    static let openRequestsVariable = "NOTESFS_OPEN_REQUESTS"

    /// Queues, after each commit, the invalidations of what the kernel may
    /// hold of it (shared with `UnmountedFileSystem`). Returns the observer id.
    static func observe(_ tree: NotesTree, fileSystem: NotesFileSystem, invalidations: InvalidationQueue) -> Int {
        tree.addObserver { [fileSystem, invalidations] commit in
            // Before the kernel can hear of the change: whatever it asks next
            // is read from the store again.
            if FolderAttributeCache.affects(commit) {
                fileSystem.folderAttributes.invalidateAll()
            } else {
                fileSystem.folderAttributes.directoriesModified(commit.directoriesModified)
            }
            let items: [Invalidation]
            if let requestDirectories = RequestMarker.currentDirectories {
                // Commits made while serving a kernel request are already in
                // the kernel's caches, except names the same commit changed in
                // other directories than the request's own.
                items =
                    NotesMount.inodeInvalidations(commit.changedBehindRequest, inodes: fileSystem.inodes)
                    + NotesMount.nameInvalidations(
                        for: commit, inodes: fileSystem.inodes, skipping: requestDirectories)
            } else {
                // Everything else (sync, other callers) is not.
                items = NotesMount.invalidations(for: commit, inodes: fileSystem.inodes)
            }
            if !items.isEmpty { invalidations.enqueue(items) }
        }
    }

    /// What the kernel may have cached about what `commit` changed.
    static func invalidations(for commit: StoreCommit, inodes: InodeTable) -> [Invalidation] {
        inodeInvalidations(commit.changedEntries, inodes: inodes)
            + nameInvalidations(for: commit, inodes: inodes, skipping: RequestMarker.Directories())
    }

    /// The kernel's attributes and pages of `entries`.
    static func inodeInvalidations(_ entries: Set<EntryRef>, inodes: InodeTable) -> [Invalidation] {
        var items: [Invalidation] = []
        for ref in entries {
            if let inode = inodes.inode(for: ref) {
                inodes.distrustCache(inode)
                items.append(.inode(inode))
            }
        }
        return items
    }

    /// The kernel's entries for names `commit` added or removed, and the
    /// listings of their directories (cached with `cache_readdir`), except in
    /// `skipping` (the directories a kernel request changed itself).
    static func nameInvalidations(
        for commit: StoreCommit, inodes: InodeTable, skipping: RequestMarker.Directories
    ) -> [Invalidation] {
        var items: [Invalidation] = []
        var directories: Set<UInt64> = []
        for name in commit.removedNames + commit.addedNames {
            if let parent = inodes.inode(for: name.directory.entry), !skipping.contains(parent) {
                items.append(.entry(parent: parent, name: name.name))
                directories.insert(parent)
            }
        }
        for directory in directories {
            inodes.distrustCache(directory)
            items.append(.inode(directory))
        }
        return items
    }

    /// Mounts and starts the invalidation thread; requests wait until `serve`.
    public func mount() throws {
        invalidations.start(sending: { [mounter] in mounter.notify($0) })
        try mounter.mount()
    }

    /// Serves requests on the calling thread until unmounted; then cleans up.
    @discardableResult
    public func serve() -> Int32 {
        let result = mounter.serve()
        close()
        return result
    }

    /// Serves on a background thread (tests in one process).
    public func serveInBackground() {
        mounter.serveInBackground()
    }

    /// Unmounts (lazily if files are open) and ends the loop.
    public func requestStop() {
        mounter.requestStop()
    }

    @discardableResult
    public func waitUntilStopped(timeoutSeconds: Double) -> Bool {
        let stopped = mounter.waitUntilStopped(timeoutSeconds: timeoutSeconds)
        if stopped { close() }
        return stopped
    }

    /// Waits until queued invalidations were sent to the kernel (tests).
    public func waitForInvalidations() {
        invalidations.waitUntilIdle()
    }

    private func close() {
        tree.removeObserver(observerID)
        invalidations.stop()
    }
}

/// Notices commits made by other processes (`notesfs restore` while mounted)
/// and then invalidates everything the kernel holds: which entries changed is
/// unknown, and the kernel holds few inodes compared with the time saved.
private final class ExternalChangeWatch: Sendable {
    private let tree: NotesTree
    private let inodes: InodeTable
    private let log: MountLog
    private let lastCounter = Mutex<Int64?>(nil)
    /// What the mount keeps in memory about the store, dropped with the kernel's caches.
    private let folderAttributes: FolderAttributeCache

    init(tree: NotesTree, inodes: InodeTable, folderAttributes: FolderAttributeCache, log: MountLog) {
        self.tree = tree
        self.inodes = inodes
        self.folderAttributes = folderAttributes
        self.log = log
    }

    func check() -> [Invalidation] {
        guard let counter = try? tree.externalChangeCounter() else { return [] }
        let changed = lastCounter.withLock { last -> Bool in
            defer { last = counter }
            return last != nil && last != counter
        }
        guard changed else { return [] }
        folderAttributes.invalidateAll()
        log.info("the database was changed by another process; dropping the kernel's cached attributes and pages")
        return inodes.attachedInodes().map { inode in
            inodes.distrustCache(inode)
            return .inode(inode)
        }
    }
}
