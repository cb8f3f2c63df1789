import Foundation
import Synchronization

/// Lets the `notesfs` command attach the sync engine to a mount without the
/// mount knowing about sync (DESIGN.md "Parts"): the mount reports closes and
/// fsyncs of files, and `.notesfs/status` shows extra lines the command provides.
public final class MountHooks: Sendable {
    private let closed = Mutex<(@Sendable () -> Void)?>(nil)
    private let status = Mutex<(@Sendable () -> String?)?>(nil)

    public init() {}

    /// Called after a note's file handle is released or fsynced (on a FUSE
    /// thread: keep it short, queue work).
    public func onFileClosed(_ action: @escaping @Sendable () -> Void) { closed.withLock { $0 = action } }

    /// Extra text appended to `.notesfs/status` (sync progress, next retry).
    public func onStatus(_ provider: @escaping @Sendable () -> String?) { status.withLock { $0 = provider } }

    func fileClosed() { closed.withLock { $0 }?() }

    func statusExtra() -> String? { status.withLock { $0 }?() }
}

extension NotesMount {
    /// The hooks of this mount's file system.
    public var hooks: MountHooks { fileSystem.hooks }
}
