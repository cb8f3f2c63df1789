import NotesModel

/// What a store tells its server about commits (`CommitReporting`).
public enum StoreCommit: Sendable, Hashable {
    /// A push through this store object committed (or may have) to the account.
    case local(AccountID)
    /// Another process committed to an account, as its notification said.
    case remote(RemoteCommit)
    /// Commits may have been made that the store cannot name (it began
    /// watching, its listener reconnected, a notification was lost, another
    /// connection wrote the database file, the epoch changed).
    case unknown
}

/// A store that reports every commit that changes a feed, whoever made it,
/// so the server may keep each account's head in memory (`FeedHeads`) and
/// answer, park and end an idle long poll without reading the store.
public protocol CommitReporting: Sendable {
    /// Starts calling `handler` with every commit (`StoreCommit`). The first
    /// report comes at the latest when the store is sure it hears every
    /// commit from then on, and is `.unknown`. Returns false when the store
    /// cannot report every commit; the server then reads every poll from it.
    func reportCommits(to handler: @escaping @Sendable (StoreCommit) -> Void) -> Bool

    /// False while the store may miss commits made elsewhere (its listener
    /// is not connected): heads read meanwhile are not trusted.
    var hearsEveryCommit: Bool { get }

    /// Tells the other processes sharing the store of `commit`, which they
    /// may not have heard of: a push answered from its remembered result was
    /// committed earlier, perhaps by a process that died before telling anyone.
    func announceCommit(_ commit: RemoteCommit)
}

extension CommitReporting {
    public func announceCommit(_ commit: RemoteCommit) {}
    public var hearsEveryCommit: Bool { true }
}

extension SyncServer {
    /// Follows what `reporter` (the server's store) reports: commits made
    /// elsewhere wake this process's long polls, and from then on each
    /// account's head is kept in memory, so a poll standing at the head costs
    /// no read. Call once, before serving.
    public func followCommits(of reporter: any CommitReporting) {
        let following = reporter.reportCommits { [weak self] commit in self?.storeCommitted(commit) }
        if following { heads.follow { reporter.hearsEveryCommit } }
    }

    /// Whether heads are kept in memory (`followCommits`).
    public var keepsHeads: Bool { heads.isFollowing }

    func storeCommitted(_ commit: StoreCommit) {
        switch commit {
        case .local(let account):
            // SyncServer.push wakes the polls once it recorded the device's own stretch.
            heads.forget(account)
        case .remote(let remote):
            remoteCommitted(remote)
        case .unknown:
            // Forget first: a woken poll then reads the store.
            heads.forgetAll()
            notifier.notifyAll()
        }
    }
}
