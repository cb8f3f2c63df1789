import NotesStore
import Synchronization

/// Folder attributes answered from memory. The kernel asks for a folder's
/// attributes once per file created in it (a create invalidates the parent's
/// attributes, and `default_permissions` reads them again before the next
/// create). Such a create moves only the folder's mtime and ctime, which the
/// commit reports (`directoriesModified`): those are set on the kept entry,
/// not read again. Any other commit that changes a folder empties the cache,
/// and so does a commit by another process.
final class FolderAttributeCache: Sendable {
    private struct State {
        /// Bumped by every invalidation and update, so an answer read from
        /// the store before one is never kept after it.
        var generation: UInt64 = 0
        var entries: [UInt64: Entry] = [:]
        /// The inode each kept folder is under.
        var inodes: [EntryRef: UInt64] = [:]
    }

    private let state = Mutex(State())
    /// A bound on memory: past this many folders the cache starts over.
    static let foldersMax = 65_536

    /// The entry kept for `inode`, if it is still `ref`'s.
    func entry(of inode: UInt64, ref: EntryRef) -> Entry? {
        state.withLock { state in
            guard let kept = state.entries[inode], kept.ref == ref else { return nil }
            return kept
        }
    }

    /// The generation to pass to `keep` for an entry about to be read.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `entry` unless something was invalidated since `generation`.
    func keep(_ entry: Entry, of inode: UInt64, readAt generation: UInt64) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count >= Self.foldersMax {
                state.entries.removeAll()
                state.inodes.removeAll()
            }
            if let old = state.entries[inode], old.ref != entry.ref { state.inodes[old.ref] = nil }
            state.entries[inode] = entry
            state.inodes[entry.ref] = inode
        }
    }

    /// Forgets everything (a folder changed, or another process wrote the database).
    func invalidateAll() {
        state.withLock { state in
            state.generation &+= 1
            state.entries.removeAll(keepingCapacity: true)
            state.inodes.removeAll(keepingCapacity: true)
        }
    }

    /// Gives kept folders the mtimes a commit set (entries created, removed
    /// or renamed in them), exactly as the store now shows them.
    func directoriesModified(_ times: [DirectoryRef: Int64]) {
        guard !times.isEmpty else { return }
        state.withLock { state in
            state.generation &+= 1
            for (directory, time) in times {
                guard let inode = state.inodes[directory.entry] else { continue }
                state.entries[inode]?.modifiedNanoseconds = time
            }
        }
    }

    /// True when `commit` may have changed a folder's attributes: the folder
    /// itself, or a directory named in one (its link count counts them).
    static func affects(_ commit: StoreCommit) -> Bool {
        func isFolder(_ ref: EntryRef) -> Bool {
            if case .folder = ref { return true }
            return false
        }
        return commit.changedEntries.contains(where: isFolder)
            || commit.addedNames.contains(where: \.isDirectory)
            || commit.removedNames.contains(where: \.isDirectory)
    }
}
