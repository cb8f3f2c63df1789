import Foundation
import NotesStore
import Synchronization

/// Lets the `notesfs` command attach the sync engine to a mount without the
/// mount knowing about sync (DESIGN.md "Parts"): the mount reports closes and
/// fsyncs of files, and `.notesfs/status` shows what the sync engine is doing
/// (which the command provides).
public final class MountHooks: Sendable {
    // The closures live inside structs: a bare function value read back
    // through `withLock { $0 }` is re-wrapped in two reabstraction thunks on
    // every read (the inout access writes it back wrapped), so every close
    // made the next one slower and deeper until the stack ran out.
    private struct Action: Sendable { let run: @Sendable () -> Void }
    private struct StatusProvider: Sendable { let live: @Sendable () -> LiveSync? }

    private let closed = Mutex<Action?>(nil)
    private let status = Mutex<StatusProvider?>(nil)

    public init() {}

    /// Called after a note's file handle is released or fsynced (on a FUSE
    /// thread: keep it short, queue work).
    public func onFileClosed(_ action: @escaping @Sendable () -> Void) {
        closed.withLock { $0 = Action(run: action) }
    }

    /// What `.notesfs/status` and `status.json` show of the sync engine
    /// (a run's progress, the next retry).
    public func onStatus(_ provider: @escaping @Sendable () -> LiveSync?) {
        status.withLock { $0 = StatusProvider(live: provider) }
    }

    func fileClosed() { closed.withLock { $0 }?.run() }

    func liveSync() -> LiveSync? { status.withLock { $0 }?.live() }
}

extension NotesMount {
    /// The hooks of this mount's file system.
    public var hooks: MountHooks { fileSystem.hooks }
}
