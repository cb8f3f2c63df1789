import Foundation
import FuseKit
import Synchronization

/// The mount's one model of open files: whether the kernel opens files
/// without asking, and the open files and directories, by the handle number
/// given to the kernel (notes, local files and control files alike).
final class HandleTable: Sendable {
    /// At most this many handles are open at once; more fail with ENFILE.
    static let openHandlesMax = 1 << 20

    enum Handle {
        /// A note or local file. `snapshot` is set once the inode was detached
        /// (unlinked, or replaced by a rename-over): the handle then reads and
        /// writes these bytes only, never the store.
        case file(inode: UInt64, flags: OpenFlags, snapshot: Snapshot?)
        case directory(inode: UInt64)
        /// A generated control file (its bytes as of open).
        case generated(inode: UInt64, content: Data)
    }

    struct Snapshot {
        var content: Data
        var attributes: FileAttributes
    }

    private struct State {
        var handles: [UInt64: Handle] = [:]
        var next: UInt64 = 1
        var openFiles = 0
        /// The store's `kernelViewGeneration` when each file handle was opened.
        var views: [UInt64: UInt64] = [:]
        /// The oldest view a read through each file handle was served through
        /// since it last wrote: the program holding it may write what it read.
        var readViews: [UInt64: UInt64] = [:]
    }

    private let state = Mutex(State())
    private let skipsOpens = Atomic<Bool>(false)

    /// True once the kernel agreed to open files without asking (set when
    /// the connection is up): no file handles exist then, detached inodes
    /// keep their bytes in the inode table, and control files are generated
    /// per read.
    var opensAreSkipped: Bool { skipsOpens.load(ordering: .acquiring) }

    func setOpensAreSkipped(_ skipped: Bool) {
        skipsOpens.store(skipped, ordering: .releasing)
    }

    /// `view` is the store's `kernelViewGeneration` read before the open: a
    /// write through the handle is judged against it.
    func open(_ handle: Handle, view: UInt64 = 0) throws -> UInt64 {
        try state.withLock { state in
            guard state.handles.count < Self.openHandlesMax else { throw FileSystemError(ENFILE) }
            let number = state.next
            state.next += 1
            state.handles[number] = handle
            if case .file = handle {
                state.openFiles += 1
                state.views[number] = view
            }
            return number
        }
    }

    /// Records that a read through file handle `number` was served through `view`.
    func servedRead(through number: UInt64, view: UInt64) {
        state.withLock { state in
            guard state.views[number] != nil else { return }
            state.readViews[number] = min(state.readViews[number] ?? view, view)
        }
    }

    /// The views a write through file handle `number` is judged by: what its
    /// program could have seen when it opened it, and the oldest text read
    /// through it since it last wrote (forgotten now: its next write starts afresh).
    func viewsForWrite(through number: UInt64) -> [UInt64] {
        state.withLock { state in
            let read = state.readViews.removeValue(forKey: number)
            return [state.views[number], read].compactMap { $0 }
        }
    }

    func handle(_ number: UInt64) -> Handle? {
        state.withLock { $0.handles[number] }
    }

    func close(_ number: UInt64) {
        state.withLock { state in
            if case .file = state.handles.removeValue(forKey: number) {
                state.openFiles -= 1
                state.views[number] = nil
                state.readViews[number] = nil
            }
        }
    }

    /// True when any file is open (cheap check before looking for handles to detach).
    var hasOpenFiles: Bool { state.withLock { $0.openFiles > 0 } }

    /// True when a file handle on `inode` is open and not yet detached.
    func hasAttachedHandle(on inode: UInt64) -> Bool {
        state.withLock { state in
            state.handles.values.contains { handle in
                if case .file(let open, _, nil) = handle { return open == inode }
                return false
            }
        }
    }

    /// Gives every open, attached handle on `inode` its own copy of `snapshot`.
    func detachHandles(on inode: UInt64, snapshot: Snapshot) {
        state.withLock { state in
            for (number, handle) in state.handles {
                if case .file(let open, let flags, nil) = handle, open == inode {
                    state.handles[number] = .file(inode: open, flags: flags, snapshot: snapshot)
                }
            }
        }
    }

    /// The attributes of the lowest-numbered detached handle on `inode`, if
    /// any: what `fstat` of an unlinked file shows, since Linux sends its
    /// getattr without a handle.
    func detachedAttributes(ofInode inode: UInt64) -> FileAttributes? {
        state.withLock { state in
            var found: (number: UInt64, attributes: FileAttributes)?
            for (number, handle) in state.handles {
                guard case .file(let open, _, let snapshot?) = handle, open == inode else { continue }
                if let current = found, current.number < number { continue }
                found = (number, snapshot.attributes)
            }
            return found?.attributes
        }
    }

    /// Changes a detached handle's bytes (writes and truncation through it).
    func updateSnapshot(_ number: UInt64, _ change: (inout Snapshot) -> Void) -> Snapshot? {
        state.withLock { state in
            guard case .file(let inode, let flags, var snapshot?) = state.handles[number] else { return nil }
            change(&snapshot)
            state.handles[number] = .file(inode: inode, flags: flags, snapshot: snapshot)
            return snapshot
        }
    }
}
