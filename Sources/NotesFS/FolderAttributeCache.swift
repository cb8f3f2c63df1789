import NotesStore
import Synchronization

/// Folder attributes answered from memory. The kernel asks for a folder's
/// attributes once per file created in it (a create invalidates the parent's
/// attributes, and `default_permissions` reads them again before the next
/// create), while a folder's own attributes (mode, mtime) change only when the
/// folder itself does. Any commit that changes a folder empties the cache, and
/// so does a commit by another process.
final class FolderAttributeCache: Sendable {
    private struct State {
        /// Bumped by every invalidation, so an answer read from the store
        /// before an invalidation is never kept after it.
        var generation: UInt64 = 0
        var attributes: [UInt64: (ref: EntryRef, attributes: FileAttributes)] = [:]
    }

    private let state = Mutex(State())
    /// A bound on memory: past this many folders the cache starts over.
    static let foldersMax = 65_536

    /// The attributes kept for `inode`, if they are still those of `ref`.
    func attributes(of inode: UInt64, ref: EntryRef) -> FileAttributes? {
        state.withLock { state in
            guard let kept = state.attributes[inode], kept.ref == ref else { return nil }
            return kept.attributes
        }
    }

    /// The generation to pass to `keep` for attributes about to be read.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `attributes` unless something was invalidated since `generation`.
    func keep(_ attributes: FileAttributes, of inode: UInt64, ref: EntryRef, readAt generation: UInt64) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.attributes.count >= Self.foldersMax { state.attributes.removeAll() }
            state.attributes[inode] = (ref, attributes)
        }
    }

    /// Forgets everything (a folder changed, or another process wrote the database).
    func invalidateAll() {
        state.withLock { state in
            state.generation &+= 1
            state.attributes.removeAll(keepingCapacity: true)
        }
    }

    /// True when `commit` may have changed a folder's attributes: the folder
    /// itself, or a directory named in one (its link count counts them).
    static func affects(_ commit: StoreCommit) -> Bool {
        func isFolder(_ ref: EntryRef) -> Bool {
            if case .folder = ref { return true }
            return false
        }
        func mayBeDirectory(_ ref: EntryRef) -> Bool {
            switch ref {
            case .folder, .local: return true
            case .note, .root: return false
            }
        }
        return commit.changedEntries.contains(where: isFolder)
            || commit.addedNames.contains { mayBeDirectory($0.entry) }
            || commit.removedNames.contains { mayBeDirectory($0.entry) }
    }
}
