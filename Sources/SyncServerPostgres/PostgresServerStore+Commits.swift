import NotesModel
import SyncServer

extension PostgresServerStore: CommitReporting {
    /// Reports this store's pushes and epoch changes as they commit, every
    /// other process's commits as their notifications arrive, and `.unknown`
    /// whenever the listener has (re)connected, another process announced
    /// lost notifications, or the epoch changed. False without a listener.
    public func reportCommits(to handler: @escaping @Sendable (StoreCommit) -> Void) -> Bool {
        shared.reporter.withLock { $0 = CommitObserver(call: handler) }
        return options.listen
    }

    public var hearsEveryCommit: Bool { listener?.isListening ?? false }

    /// Notifies every other process of `commit`, as its push would have.
    public func announceCommit(_ commit: RemoteCommit) {
        notifier.notify("c:\(shared.instance):\(commit.payload)")
    }
}
