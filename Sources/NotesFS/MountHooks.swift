import Foundation
import Synchronization

/// Lets the `notesfs` command attach the sync engine to a mount without the
/// mount knowing about sync (DESIGN.md "Parts"): the mount reports closes and
/// fsyncs of files, and `.notesfs/status` shows extra lines the command provides.
public final class MountHooks: Sendable {
    // The closures live inside structs: a bare function value read back
    // through `withLock { $0 }` is re-wrapped in two reabstraction thunks on
    // every read (the inout access writes it back wrapped), so every close
    // made the next one slower and deeper until the stack ran out.
    private struct Action: Sendable { let run: @Sendable () -> Void }
    private struct StatusProvider: Sendable { let text: @Sendable () -> String? }

    private let closed = Mutex<Action?>(nil)
    private let status = Mutex<StatusProvider?>(nil)

    public init() {}

    /// Called after a note's file handle is released or fsynced (on a FUSE
    /// thread: keep it short, queue work).
    public func onFileClosed(_ action: @escaping @Sendable () -> Void) {
        closed.withLock { $0 = Action(run: action) }
    }

    /// Extra text appended to `.notesfs/status` (sync progress, next retry).
    public func onStatus(_ provider: @escaping @Sendable () -> String?) {
        status.withLock { $0 = StatusProvider(text: provider) }
    }

    func fileClosed() { closed.withLock { $0 }?.run() }

    func statusExtra() -> String? { status.withLock { $0 }?.text() }
}

extension NotesMount {
    /// The hooks of this mount's file system.
    public var hooks: MountHooks { fileSystem.hooks }
}
