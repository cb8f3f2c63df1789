import Foundation
import NotesModel
import PostgresKit
import Synchronization
import SyncProtocol
import SyncServer

/// The `ServerStore` for many users: PostgreSQL, shared by any number of
/// `notesfs serve` processes.
///
/// Locking, as on every backend (DESIGN.md "Server rules"): pushes run in
/// READ COMMITTED group transactions (`PostgresGroupWriter`: the pushes that
/// queued while the previous group committed, one `COMMIT` for all) that
/// first take the account rows in ascending account order with
/// `SELECT … FOR UPDATE` (the counter lives there and stays locked until
/// commit), then read the idempotency rows, then the entity rows (which the
/// account locks cover: every writer of an entity row holds its account
/// row first). Pushes to one account are therefore serialised across every
/// process, and a feed read —
/// one statement, one snapshot holding the counter and the rows it stamped
/// together — can never pass over a change still being written. Deadlocks
/// and serialization failures roll the whole group back and it runs again (at
/// most `transactionAttemptsMax` times); nothing of a failed attempt stays.
///
/// A group that applied something queues a `pg_notify` per account after its
/// commit (`PostgresNotifier` batches them), and a
/// listener in every process wakes that account's long polls
/// (`onRemoteCommit`). `PostgreSQL` commits are durable before `COMMIT`
/// returns (`synchronous_commit=on`, the default; do not turn it off).
public final class PostgresServerStore: ServerStore {
    public struct Options: Sendable {
        public var pool: PostgresPool.Options
        /// Keep a `LISTEN` connection for commits made by other processes.
        public var listen: Bool
        /// Runs of one push transaction at most, after deadlocks or serialization failures.
        public var transactionAttemptsMax: Int

        /// Writer threads of the group commit, each with a connection of its
        /// own besides the pool. Groups grow while a commit is in flight; a
        /// second writer fills the wait for one group's round trips and
        /// fsync with the next group (more measured no better on 2 cores).
        public var groupWriters: Int
        /// Pushes in one group transaction at most.
        public var groupPushesMax: Int
        /// How long a looked-up live token is reused without asking the
        /// database (0: never). Revoking or adding a token notifies every
        /// process, which drops that account's tokens at once; the limit
        /// bounds how late a revocation takes effect only if notifications
        /// are lost (the listener was disconnected).
        public var tokenCacheSeconds: Double

        public init(
            pool: PostgresPool.Options = PostgresPool.Options(), listen: Bool = true, transactionAttemptsMax: Int = 8,
            groupWriters: Int = 2, groupPushesMax: Int = 128, tokenCacheSeconds: Double = 1
        ) {
            self.pool = pool
            self.listen = listen
            self.transactionAttemptsMax = transactionAttemptsMax
            self.groupWriters = groupWriters
            self.groupPushesMax = groupPushesMax
            self.tokenCacheSeconds = tokenCacheSeconds
        }
    }

    /// The handler of other processes' commits.
    struct CommitObserver<Argument>: Sendable {
        let call: @Sendable (Argument) -> Void
    }

    /// What the listener shares with the store.
    final class Shared: Sendable {
        let epoch: Mutex<String>
        /// Kept inside a struct: a bare function value read back through
        /// `withLock { $0 }` is re-wrapped in two reabstraction thunks on every
        /// read (the inout access writes it back wrapped), so each call got
        /// slower and deeper until the stack ran out.
        let observer = Mutex<CommitObserver<RemoteCommit>?>(nil)
        /// The handler of token changes (adds and revocations) in any process.
        let tokenObserver = Mutex<CommitObserver<AccountID?>?>(nil)
        /// Where every commit is reported (`CommitReporting`).
        let reporter = Mutex<CommitObserver<StoreCommit>?>(nil)
        /// This store's random id: its own notifications are skipped (a local
        /// push wakes local polls directly).
        let instance = UUIDText.format(UUID())
        /// Live tokens looked up lately: token id → record and when it expires.
        let tokens = Mutex<[String: (record: TokenRecord, expires: ContinuousClock.Instant)]>([:])
        init(epoch: String) { self.epoch = Mutex(epoch) }

        /// Forgets the cached tokens of `account`, or all of them.
        func forgetTokens(of account: AccountID?) {
            tokens.withLock { tokens in
                if let account {
                    tokens = tokens.filter { $0.value.record.account != account }
                } else {
                    tokens.removeAll()
                }
            }
        }
    }

    /// Session settings of the pool's and the writers' connections. Every
    /// statement they run is a lookup by key with an index to serve it; the
    /// planner, when a table is small, prefers sequential scans and hash
    /// joins instead, and a prepared statement keeps that plan for the
    /// connection's life while the table grows (measured: each group commit
    /// read every row of `seen_changes`, 13 million rows read in 8 s).
    /// Other plans stay possible where no index serves a statement. With
    /// those settings the generic plan is the index lookup wanted, so it is
    /// always used: PostgreSQL otherwise planned the group's lookups anew on
    /// every run (their generic plans looked costlier than the custom ones),
    /// as much CPU as running them (measured with pg_stat_statements).
    static let plannerSettings =
        ["enable_seqscan", "enable_hashjoin", "enable_mergejoin"].map {
            PostgresConnection.SessionSetting($0, "off")
        } + [PostgresConnection.SessionSetting("plan_cache_mode", "force_generic_plan")]

    public let conninfo: String
    let pool: PostgresPool
    let options: Options
    /// The `NOTIFY` channel: one per PostgreSQL schema holding a notesfs store.
    let channel: String
    let shared: Shared
    let listener: PostgresListener?
    let notifier: PostgresNotifier
    private let writer: PostgresGroupWriter
    private let closed = Atomic<Bool>(false)
    /// Never changes once made (`AccountKey`).
    private let installationSecretValue: String

    /// Connects, migrates the schema (safe with several processes starting
    /// at once) and starts listening. Throws `unavailable` when the database
    /// cannot be reached.
    public init(conninfo: String, options: Options = Options()) throws {
        self.conninfo = conninfo
        self.options = options
        let epoch: String
        let schema: String
        do {
            let connection = try PostgresConnection(conninfo: conninfo, applicationName: "notesfs-migrate")
            (epoch, installationSecretValue) = try PostgresServerSchema.migrate(connection)
            schema = try connection.execute("SELECT current_schema()::text").string(0, 0)
        } catch {
            throw Self.storeError(error)
        }
        channel = String("notesfs_\(schema)".prefix(60))
        shared = Shared(epoch: epoch)
        var poolOptions = options.pool
        poolOptions.settings += Self.plannerSettings
        pool = PostgresPool(conninfo: conninfo, options: poolOptions)
        // `x:` tells the other processes that notifications of this one were lost.
        notifier = PostgresNotifier(conninfo: conninfo, channel: channel, lostPayload: "x:\(shared.instance)")
        writer = PostgresGroupWriter(
            conninfo: conninfo, settings: Self.plannerSettings, writers: options.groupWriters,
            groupPushesMax: options.groupPushesMax,
            attemptsMax: options.transactionAttemptsMax
        ) { [notifier, shared] commits in
            // After the commit, batched on the notifier's own connection: a
            // NOTIFY inside the group would hold PostgreSQL's notify lock
            // across the commit's WAL flush and serialise every group.
            for commit in commits { notifier.notify("c:\(shared.instance):\(commit.payload)") }
        }
        if options.listen {
            do {
                listener = try PostgresListener(conninfo: conninfo, channel: channel) { [shared] notification in
                    Self.received(notification, shared)
                }
            } catch {
                throw Self.storeError(error)
            }
        } else {
            listener = nil
        }
    }

    /// Calls `handler` with every commit another process (or another store
    /// object) makes; `notesfs serve` passes it to `SyncServer.remoteCommitted`,
    /// so long polls wake in every process and sleep through their own device's pushes.
    public func onRemoteCommit(_ handler: @escaping @Sendable (RemoteCommit) -> Void) {
        shared.observer.withLock { $0 = CommitObserver(call: handler) }
    }

    /// Calls `handler` after the tokens of an account changed in any process
    /// (nil: after a reconnection, when a change may have been missed), once
    /// the token cache has forgotten them; `notesfs serve` wakes that
    /// account's long polls so they re-check their tokens.
    public func onTokensChanged(_ handler: @escaping @Sendable (AccountID?) -> Void) {
        shared.tokenObserver.withLock { $0 = CommitObserver(call: handler) }
    }

    private static func received(_ notification: PostgresConnection.Notification?, _ shared: Shared) {
        guard let notification else {
            // Listening (again): a commit or token notification may have been missed.
            shared.reporter.withLock { $0 }?.call(.unknown)
            shared.forgetTokens(of: nil)
            shared.tokenObserver.withLock { $0 }?.call(nil)
            return
        }
        let payload = notification.payload
        if payload.hasPrefix("c:") {
            // c:<instance>:<commit's payload>
            let fields = payload.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count >= 3, fields[1] != shared.instance,
                let commit = RemoteCommit(payloadFields: fields.dropFirst(2))
            else { return }
            shared.observer.withLock { $0 }?.call(commit)
            shared.reporter.withLock { $0 }?.call(.remote(commit))
            return
        }
        let parts = payload.split(separator: ":", maxSplits: 1).map(String.init)
        if parts.count == 2, parts[0] == "e" {
            shared.epoch.withLock { $0 = parts[1] }
            shared.reporter.withLock { $0 }?.call(.unknown)
        } else if parts.count == 2, parts[0] == "x", parts[1] != shared.instance {
            // Another process could not send some of its notifications.
            shared.reporter.withLock { $0 }?.call(.unknown)
        } else if parts.count == 2, parts[0] == "t", let raw = Int64(parts[1]) {
            shared.forgetTokens(of: AccountID(raw))
            shared.tokenObserver.withLock { $0 }?.call(AccountID(raw))
        }
    }

    /// Runs `body` on a pooled connection and turns every error into a
    /// `ServerStoreError` (errors thrown by a push body pass through).
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw ServerStoreError.unavailable("the store is closed") }
        do {
            return try await pool.withConnection(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    static func storeError(_ error: any Error) -> any Error {
        if error is ServerStoreError { return error }
        if let error = error as? PostgresError {
            if error.isUnavailable || error.isRetryableTransaction {
                return ServerStoreError.unavailable(error.description)
            }
            return ServerStoreError.failure(error.description)
        }
        return error
    }

    /// Runs `body` in a transaction, again after a deadlock or serialization
    /// failure (each attempt rolled back whole), with a short random pause.
    func retrying<T>(
        _ connection: PostgresConnection, begin: String = "BEGIN", _ body: () throws -> T
    ) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try connection.transaction(begin, body)
            } catch let error as PostgresError where error.isRetryableTransaction && attempt < options.transactionAttemptsMax {
                usleep(UInt32.random(in: 1_000...(5_000 * UInt32(attempt))))
            }
        }
    }

    // MARK: ServerStore

    public func epoch() async throws -> String {
        shared.epoch.withLock { $0 }
    }

    public func installationSecret() async throws -> String { installationSecretValue }

    public func newEpoch(now: Date) async throws -> String {
        let channel = channel
        let epoch = try await run { [self] connection in
            try retrying(connection) {
                let epoch = ServerEpoch.make()
                try connection.execute("UPDATE server_meta SET value = $1 WHERE key = 'epoch'", epoch)
                try connection.execute(
                    "UPDATE accounts SET counter = CASE WHEN $2 > counter THEN $2 ELSE counter + $1 END", ServerEpoch.minimumGap,
                    ServerEpoch.clockFloor(now: now))
                try connection.execute("SELECT pg_notify($1, $2)", channel, "e:\(epoch)")
                return epoch
            }
        }
        shared.epoch.withLock { $0 = epoch }
        shared.reporter.withLock { $0 }?.call(.unknown)
        return epoch
    }

    /// Queues the push for the next group transaction (`PostgresGroupWriter`)
    /// and returns once that group's `COMMIT` returned.
    public func push<Result: Sendable>(
        account: AccountID, _ body: @escaping @Sendable (any PushTransaction) throws -> Result
    ) async throws -> Result {
        try await push(account: account, ownChanges: { _ in nil }, body)
    }

    /// Like `push`; the notification of the commit carries `ownChanges` of
    /// the result, so other processes skip those versions for that device's polls.
    public func push<Result: Sendable>(
        account: AccountID, ownChanges: @escaping @Sendable (Result) -> OwnChanges?,
        _ body: @escaping @Sendable (any PushTransaction) throws -> Result
    ) async throws -> Result {
        guard !closed.load(ordering: .acquiring) else { throw ServerStoreError.unavailable("the store is closed") }
        // Also when it failed: a lost COMMIT's outcome is unknown.
        defer { shared.reporter.withLock { $0 }?.call(.local(account)) }
        return try await writer.push(account: account, ownChanges: ownChanges, body)
    }

    public func close() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        listener?.stop()
        writer.stop()
        notifier.stop()
        pool.close()
    }
}
