import Foundation
import FuseKit
import NotesStore

/// The mount's request handling with no kernel attached: the same
/// `NotesFileSystem`, inode table, store observer and invalidation queue as
/// `NotesMount`, but requests are made by calling `request`, and the
/// invalidations the kernel would be sent are taken with `takeInvalidations`.
/// The seeded simulation puts a simulated kernel in front of it; nothing is mounted.
public final class UnmountedFileSystem: Sendable {
    private let router: FileSystemRouter
    private let invalidations: InvalidationQueue
    private let tree: NotesTree
    private let observerID: Int

    /// `skipsOpens` is what the kernel agreed at connection time (the mount
    /// asks for it: no open or release requests, handle 0).
    public init(tree: NotesTree, log: MountLog = .discard, skipsOpens: Bool = true) {
        // Never started: its owner takes the items instead of a thread sending them.
        let invalidations = InvalidationQueue(log: log)
        let router = FileSystemRouter(
            tree: tree, inodes: InodeTable(), folderAttributes: FolderAttributeCache(), invalidations: invalidations,
            hooks: MountHooks(), log: log)
        router.connected(skipsOpens: skipsOpens)
        self.tree = tree
        self.router = router
        self.invalidations = invalidations
        observerID = NotesMount.observe(tree, fileSystem: router.notes, invalidations: invalidations)
    }

    /// Serves one kernel request as libfuse's worker would: marked, so commits
    /// `body` makes count as the kernel's own. `directories` are the directory
    /// inodes whose names the request changes (at most two, as for rename).
    public func request<T>(
        changingNamesIn directories: [UInt64] = [], _ body: (any FileSystemOperations) throws -> T
    ) rethrows -> T {
        let marked = RequestMarker.Directories(first: directories.first ?? 0, second: directories.dropFirst().first ?? 0)
        return try RequestMarker.serving(marked) { try body(router) }
    }

    /// The invalidations queued since the last call, in order (what the kernel would be sent).
    public func takeInvalidations() -> [Invalidation] {
        invalidations.takePending()
    }

    /// Stops following the store's commits.
    public func close() {
        tree.removeObserver(observerID)
    }
}
