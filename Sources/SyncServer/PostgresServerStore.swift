import Foundation
import NotesModel
import PostgresKit
import Synchronization
import SyncProtocol

/// The `ServerStore` for many users: PostgreSQL, shared by any number of
/// `notesfs serve` processes.
///
/// Locking, as on every backend (DESIGN.md "Server rules"): pushes run in
/// READ COMMITTED group transactions (`PostgresGroupWriter`: the pushes that
/// queued while the previous group committed, one `COMMIT` for all) that
/// first take the account rows in ascending account order with
/// `SELECT … FOR UPDATE` (the counter lives there and stays locked until
/// commit), then per push read the idempotency rows, then lock the entity
/// rows with one `SELECT … ORDER BY kind, id FOR UPDATE`. Pushes to one
/// account are therefore serialised across every process, and a feed read —
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
                let epoch = SQLiteServerSchema.makeEpoch()
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

    public func token(id: String) async throws -> TokenRecord? {
        let now = ContinuousClock.now
        // Only while the listener listens: otherwise a revocation may go unheard.
        if listener?.isListening == true, let cached = shared.tokens.withLock({ $0[id] }), cached.expires > now {
            return cached.record
        }
        let record: TokenRecord? = try await run { connection in
            let rows = try connection.execute(
                """
                SELECT t.account_id, t.secret_hash, t.revoked_at IS NOT NULL OR a.revoked_at IS NOT NULL
                FROM tokens t JOIN accounts a ON a.account_id = t.account_id WHERE t.token_id = $1
                """, id)
            guard rows.rowCount == 1 else { return nil }
            return TokenRecord(
                tokenID: id, account: AccountID(try rows.int64(0, 0)), secretHash: Array(try rows.data(0, 1)),
                revoked: try rows.bool(0, 2))
        }
        // Only live tokens are kept: a revoked or unknown one is asked again
        // each time, so a token added anywhere works at once.
        if let record, !record.revoked, options.tokenCacheSeconds > 0, options.listen {
            let expires = now + .milliseconds(Int64(options.tokenCacheSeconds * 1_000))
            shared.tokens.withLock { tokens in
                // Bounded: a full cache starts over rather than grow.
                if tokens.count >= Self.tokenCacheEntriesMax { tokens.removeAll() }
                tokens[id] = (record, expires)
            }
        }
        return record
    }

    /// Cached tokens at most.
    static let tokenCacheEntriesMax = 100_000

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

    public func changes(account: AccountID, after: Int64, rowsMax: Int, bytesMax: Int) async throws -> FeedRead {
        try await run { connection in
            // One statement: one snapshot for the counter and the rows. The
            // running size cuts the page before bodies past it are read.
            let rows = try connection.execute(
                """
                SELECT a.counter, a.purged_through, p.kind, p.id, p.version, p.change_id, p.deleted, p.name,
                    CASE WHEN p.n = 1 OR p.running <= $4 THEN p.body END, p.parent_id, p.updated_at, p.n, p.running
                FROM accounts a
                LEFT JOIN LATERAL (
                    SELECT l.*, row_number() OVER w AS n,
                        sum(octet_length(l.name) + coalesce(octet_length(l.body), 0) + 200) OVER w AS running
                    FROM (
                        SELECT * FROM entities e WHERE e.account_id = a.account_id AND e.version > $2
                        ORDER BY e.version LIMIT $3
                    ) l
                    WINDOW w AS (ORDER BY l.version)
                ) p ON true
                WHERE a.account_id = $1
                ORDER BY p.version
                """, account.rawValue, after, Int64(rowsMax + 1), Int64(bytesMax))
            guard rows.rowCount > 0 else {
                return FeedRead(entities: [], hasMore: false, head: FeedHead(counter: 0, purgedThrough: 0))
            }
            let head = FeedHead(counter: try rows.int64(0, 0), purgedThrough: try rows.int64(0, 1))
            var entities: [StoredEntity] = []
            var found = 0
            for row in 0..<rows.rowCount where !rows.isNull(row, 2) {
                found += 1
                let n = try rows.int64(row, 11)
                let running = try rows.int64(row, 12)
                guard n <= Int64(rowsMax), n == 1 || running <= Int64(bytesMax), entities.count == n - 1 else { continue }
                entities.append(try Self.entity(rows, row, from: 2))
            }
            return FeedRead(entities: entities, hasMore: found > entities.count, head: head)
        }
    }

    public func head(account: AccountID) async throws -> FeedHead {
        try await run { connection in
            let rows = try connection.execute(
                "SELECT counter, purged_through FROM accounts WHERE account_id = $1", account.rawValue)
            guard rows.rowCount == 1 else { return FeedHead(counter: 0, purgedThrough: 0) }
            return FeedHead(counter: try rows.int64(0, 0), purgedThrough: try rows.int64(0, 1))
        }
    }

    public func index(account: AccountID, after: EntityRef?, rowsMax: Int) async throws -> IndexRead {
        try await run { connection in
            let start = after.map { ($0.kind.rawValue, UUIDText.format($0.id)) }
                ?? ("", "00000000-0000-0000-0000-000000000000")
            let rows = try connection.execute(
                """
                SELECT a.counter, a.purged_through, e.kind, e.id, e.version
                FROM accounts a
                LEFT JOIN LATERAL (
                    SELECT kind, id, version FROM entities
                    WHERE account_id = a.account_id AND NOT deleted AND (kind, id) > ($2::text, $3::uuid)
                    ORDER BY kind, id LIMIT $4
                ) e ON true
                WHERE a.account_id = $1
                ORDER BY e.kind, e.id
                """, account.rawValue, start.0, start.1, Int64(rowsMax + 1))
            guard rows.rowCount > 0 else {
                return IndexRead(entries: [], hasMore: false, head: FeedHead(counter: 0, purgedThrough: 0))
            }
            let head = FeedHead(counter: try rows.int64(0, 0), purgedThrough: try rows.int64(0, 1))
            var entries: [IndexEntry] = []
            for row in 0..<rows.rowCount where !rows.isNull(row, 2) {
                entries.append(
                    IndexEntry(
                        kind: try Self.kind(try rows.string(row, 2)), id: try rows.uuid(row, 3),
                        version: try rows.int64(row, 4)))
            }
            let hasMore = entries.count > rowsMax
            if hasMore { entries.removeLast() }
            return IndexRead(entries: entries, hasMore: hasMore, head: head)
        }
    }

    public func entities(account: AccountID, refs: [EntityRef], bytesMax: Int) async throws -> FetchRead {
        guard !refs.isEmpty else { return FetchRead(found: [], notFound: [], omitted: []) }
        return try await run { [self] connection in
            try retrying(connection, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let (kinds, ids) = Self.arrays(refs)
                let sizes = try connection.execute(
                    """
                    SELECT e.kind, e.id, octet_length(e.name) + coalesce(octet_length(e.body), 0) + 200
                    FROM unnest($2::text[], $3::uuid[]) AS r(kind, id)
                    JOIN entities e ON e.account_id = $1 AND e.kind = r.kind AND e.id = r.id
                    """, account.rawValue, kinds, ids)
                var size: [EntityRef: Int] = [:]
                for row in 0..<sizes.rowCount {
                    let ref = EntityRef(kind: try Self.kind(try sizes.string(row, 0)), id: try sizes.uuid(row, 1))
                    size[ref] = try sizes.int(row, 2)
                }
                var read = FetchRead(found: [], notFound: [], omitted: [])
                var chosen: [EntityRef] = []
                var bytes = 0
                for ref in refs {
                    guard let bytesOfRef = size[ref] else {
                        read.notFound.append(ref)
                        continue
                    }
                    if !chosen.isEmpty && bytes + bytesOfRef > bytesMax {
                        read.omitted.append(ref)
                        continue
                    }
                    bytes += bytesOfRef
                    chosen.append(ref)
                }
                let (chosenKinds, chosenIds) = Self.arrays(chosen)
                let rows = try connection.execute(
                    """
                    SELECT \(Self.entityColumns) FROM unnest($2::text[], $3::uuid[]) AS r(kind, id)
                    JOIN entities e ON e.account_id = $1 AND e.kind = r.kind AND e.id = r.id
                    """, account.rawValue, chosenKinds, chosenIds)
                var byRef: [EntityRef: StoredEntity] = [:]
                for row in 0..<rows.rowCount {
                    let entity = try Self.entity(rows, row, from: 0)
                    byRef[entity.ref] = entity
                }
                read.found = chosen.compactMap { byRef[$0] }
                return read
            }
        }
    }

    public func createAccount(name: String, at date: Date) async throws -> AccountID {
        try await run { connection in
            let rows = try connection.execute(
                """
                INSERT INTO accounts(name, created_at) VALUES ($1, $2)
                ON CONFLICT (name) DO NOTHING RETURNING account_id
                """, name, SQLiteServerStore.milliseconds(date))
            guard rows.rowCount == 1 else { throw ServerStoreError.accountExists(name) }
            return AccountID(try rows.int64(0, 0))
        }
    }

    public func account(named name: String) async throws -> AccountSummary? {
        try await run { connection in
            let rows = try connection.execute("\(Self.summarySelect) WHERE a.name = $1", name)
            return rows.rowCount == 0 ? nil : try Self.summary(rows, 0)
        }
    }

    public func addToken(account: AccountID, tokenID: String, secretHash: [UInt8], at date: Date) async throws {
        try await run { [self] connection in
            try retrying(connection) {
                try connection.execute(
                    "SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", account.rawValue)
                try connection.execute(
                    "INSERT INTO tokens(account_id, token_id, secret_hash, created_at) VALUES ($1, $2, $3, $4)",
                    account.rawValue, tokenID, secretHash, SQLiteServerStore.milliseconds(date))
                try connection.execute("UPDATE accounts SET revoked_at = NULL WHERE account_id = $1", account.rawValue)
                // Delivered at commit: every process drops the account's cached tokens.
                try connection.execute("SELECT pg_notify($1, $2)", channel, "t:\(account.rawValue)")
            }
        }
        shared.forgetTokens(of: account)
    }

    public func revokeAccount(name: String, at date: Date) async throws {
        let account = try await run { [self] connection in
            try retrying(connection) {
                let now = SQLiteServerStore.milliseconds(date)
                let rows = try connection.execute(
                    "UPDATE accounts SET revoked_at = $1 WHERE name = $2 RETURNING account_id", now, name)
                guard rows.rowCount == 1 else { throw ServerStoreError.noSuchAccount(name) }
                let account = try rows.int64(0, 0)
                try connection.execute(
                    "UPDATE tokens SET revoked_at = $1 WHERE account_id = $2 AND revoked_at IS NULL", now, account)
                // Delivered at commit: every process drops the account's cached tokens.
                try connection.execute("SELECT pg_notify($1, $2)", channel, "t:\(account)")
                return account
            }
        }
        shared.forgetTokens(of: AccountID(account))
    }

    public func tokens(accountName: String) async throws -> [TokenSummary] {
        try await run { connection in
            let account = try connection.execute("SELECT account_id FROM accounts WHERE name = $1", accountName)
            guard account.rowCount == 1 else { throw ServerStoreError.noSuchAccount(accountName) }
            let rows = try connection.execute(
                """
                SELECT token_id, created_at, last_used_at, revoked_at IS NOT NULL FROM tokens
                WHERE account_id = $1 ORDER BY created_at, token_id
                """, try account.int64(0, 0))
            return try (0..<rows.rowCount).map { row in
                TokenSummary(
                    tokenID: try rows.string(row, 0),
                    createdAt: SQLiteServerStore.date(milliseconds: try rows.int64(row, 1)),
                    lastUsedAt: rows.isNull(row, 2) ? nil : SQLiteServerStore.date(milliseconds: try rows.int64(row, 2)),
                    revoked: try rows.bool(row, 3))
            }
        }
    }

    public func revokeToken(accountName: String, tokenID: String, at date: Date) async throws {
        let account = try await run { [self] connection in
            try retrying(connection) {
                let rows = try connection.execute(
                    """
                    UPDATE tokens t SET revoked_at = coalesce(t.revoked_at, $1) FROM accounts a
                    WHERE a.account_id = t.account_id AND a.name = $2 AND t.token_id = $3 RETURNING t.account_id
                    """, SQLiteServerStore.milliseconds(date), accountName, tokenID)
                guard rows.rowCount == 1 else {
                    let exists = try connection.execute("SELECT 1 FROM accounts WHERE name = $1", accountName)
                    if exists.rowCount == 0 { throw ServerStoreError.noSuchAccount(accountName) }
                    throw ServerStoreError.noSuchToken(account: accountName, token: tokenID)
                }
                let account = try rows.int64(0, 0)
                // Delivered at commit: every process drops the account's cached tokens.
                try connection.execute("SELECT pg_notify($1, $2)", channel, "t:\(account)")
                return account
            }
        }
        shared.forgetTokens(of: AccountID(account))
    }

    public func recordTokenUse(tokenID: String, at date: Date) async throws {
        try await run { connection in
            _ = try connection.execute(
                "UPDATE tokens SET last_used_at = $1 WHERE token_id = $2", SQLiteServerStore.milliseconds(date), tokenID)
        }
    }

    public func accounts() async throws -> [AccountSummary] {
        try await run { connection in
            let rows = try connection.execute("\(Self.summarySelect) ORDER BY a.name")
            return try (0..<rows.rowCount).map { try Self.summary(rows, $0) }
        }
    }

    public func counterTotal() async throws -> Int64 {
        try await run { connection in
            try connection.execute("SELECT coalesce(sum(counter), 0)::bigint FROM accounts").int64(0, 0)
        }
    }

    public func accountCount() async throws -> Int {
        try await run { connection in try connection.execute("SELECT count(*) FROM accounts").int(0, 0) }
    }

    public func purge(before date: Date) async throws -> PurgeReport {
        let cutoff = SQLiteServerStore.milliseconds(date)
        let candidates = try await run { connection in
            let rows = try connection.execute(
                """
                SELECT account_id FROM entities WHERE deleted AND updated_at < $1
                UNION SELECT account_id FROM seen_changes WHERE created_at < $1
                ORDER BY 1
                """, cutoff)
            return try (0..<rows.rowCount).map { try rows.int64($0, 0) }
        }
        var report = PurgeReport(tombstones: 0, changeIds: 0)
        // One short transaction per account, in the push lock order (account
        // row first), so retention never holds many accounts at once.
        for account in candidates {
            let removed = try await run { [self] connection in
                try retrying(connection) {
                    try connection.execute("SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", account)
                    // The history of a removed tombstone goes with it: a tree
                    // before the deletion is no longer whole.
                    try connection.execute(
                        """
                        UPDATE accounts SET purged_through = greatest(purged_through, coalesce((
                            SELECT max(version) FROM entities
                            WHERE account_id = $1 AND deleted AND updated_at < $2), 0)),
                            history_since = greatest(history_since, coalesce((
                            SELECT max(v.replaced_at) FROM entities e JOIN entity_versions v
                                ON v.account_id = e.account_id AND v.kind = e.kind AND v.id = e.id
                            WHERE e.account_id = $1 AND e.deleted AND e.updated_at < $2), 0))
                        WHERE account_id = $1
                        """, account, cutoff)
                    try connection.execute(
                        """
                        DELETE FROM entity_versions v USING entities e
                        WHERE v.account_id = $1 AND e.account_id = $1 AND e.kind = v.kind AND e.id = v.id
                            AND e.deleted AND e.updated_at < $2
                        """, account, cutoff)
                    let tombstones = try connection.execute(
                        "DELETE FROM entities WHERE account_id = $1 AND deleted AND updated_at < $2", account, cutoff
                    ).affectedRows
                    let changeIds = try connection.execute(
                        "DELETE FROM seen_changes WHERE account_id = $1 AND created_at < $2", account, cutoff
                    ).affectedRows
                    return PurgeReport(tombstones: tombstones, changeIds: changeIds)
                }
            }
            report.tombstones += removed.tombstones
            report.changeIds += removed.changeIds
        }
        return report
    }

    public func close() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        listener?.stop()
        writer.stop()
        notifier.stop()
        pool.close()
    }

    // MARK: Rows

    static let entityColumns =
        "e.kind, e.id, e.version, e.change_id, e.deleted, e.name, e.body, e.parent_id, e.updated_at"

    /// An entity from nine columns starting at `first`, in `entityColumns` order.
    static func entity(_ rows: PostgresResult, _ row: Int, from first: Int) throws -> StoredEntity {
        StoredEntity(
            ref: EntityRef(kind: try kind(try rows.string(row, first)), id: try rows.uuid(row, first + 1)),
            version: try rows.int64(row, first + 2), changeId: ChangeID(try rows.uuid(row, first + 3)),
            deleted: try rows.bool(row, first + 4), name: try rows.string(row, first + 5),
            body: try rows.data(row, first + 6), parentId: try rows.optionalUUID(row, first + 7),
            updatedAt: SQLiteServerStore.date(milliseconds: try rows.int64(row, first + 8)))
    }

    static func kind(_ text: String) throws -> EntityKind {
        guard let kind = EntityKind(rawValue: text) else {
            throw ServerStoreError.failure("stored entity kind '\(text)' is unknown")
        }
        return kind
    }

    /// Two PostgreSQL array literals (kinds, ids) for `unnest`. Their items
    /// are enum raw values and UUIDs, which need no quoting.
    static func arrays(_ refs: [EntityRef]) -> (String, String) {
        ("{" + refs.map(\.kind.rawValue).joined(separator: ",") + "}",
         "{" + refs.map { UUIDText.format($0.id) }.joined(separator: ",") + "}")
    }

    static let summarySelect = """
        SELECT a.account_id, a.name, a.counter,
            (SELECT count(*) FROM tokens t WHERE t.account_id = a.account_id AND t.revoked_at IS NULL),
            (SELECT count(*) FROM entities e WHERE e.account_id = a.account_id AND NOT e.deleted),
            a.created_at, a.revoked_at IS NOT NULL
        FROM accounts a
        """

    static func summary(_ rows: PostgresResult, _ row: Int) throws -> AccountSummary {
        AccountSummary(
            id: AccountID(try rows.int64(row, 0)), name: try rows.string(row, 1), counter: try rows.int64(row, 2),
            liveTokens: try rows.int(row, 3), liveEntities: try rows.int(row, 4),
            createdAt: SQLiteServerStore.date(milliseconds: try rows.int64(row, 5)), revoked: try rows.bool(row, 6))
    }
}
