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
    private struct MomentFetcher: Sendable { let fetch: @Sendable (Date) async throws -> ServerMoment }

    private let closed = Mutex<Action?>(nil)
    private let status = Mutex<StatusProvider?>(nil)
    private let moments = Mutex<MomentFetcher?>(nil)

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

    /// How `.notesfs/at/<moment>` asks the server for the tree at a time
    /// (without it, moments come from this machine's records). Called off
    /// the FUSE threads; a request waits for it a bounded time only.
    public func onMomentFetch(_ fetch: @escaping @Sendable (Date) async throws -> ServerMoment) {
        moments.withLock { $0 = MomentFetcher(fetch: fetch) }
    }

    func momentFetcher() -> (@Sendable (Date) async throws -> ServerMoment)? { moments.withLock { $0 }?.fetch }

    func fileClosed() { closed.withLock { $0 }?.run() }

    func liveSync() -> LiveSync? { status.withLock { $0 }?.live() }
}

extension NotesMount {
    /// The hooks of this mount's file system.
    public var hooks: MountHooks { router.notes.hooks }
}
