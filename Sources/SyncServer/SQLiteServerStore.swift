import Foundation
import NotesModel
import SQLiteKit
import Synchronization
import SyncProtocol

/// The embedded `ServerStore`: one SQLite file in WAL mode. One writer thread
/// with `synchronous=FULL` commits concurrent pushes together (group commit);
/// a few read connections serve the feed, the index and token checks.
///
/// Locking: the writer's `BEGIN IMMEDIATE` holds the database write lock from
/// the first statement to `COMMIT`, which covers the account row, the
/// idempotency rows and the entities in DESIGN.md's order; readers see only
/// committed snapshots, so the counter and the rows it stamped appear together
/// and the feed never shows a gap.
public final class SQLiteServerStore: ServerStore {
    /// Tuning for one store.
    public struct Options: Sendable {
        /// Read connections (each has its own queue).
        public var readers: Int
        /// Writes committed together at most.
        public var groupWritesMax: Int

        public init(readers: Int = 3, groupWritesMax: Int = 512) {
            self.readers = readers
            self.groupWritesMax = groupWritesMax
        }
    }

    /// The database file.
    public let path: String
    private let writer: GroupCommitWriter
    private let readers: [SQLiteReader]
    private let nextReader = Atomic<Int>(0)
    private let currentEpoch: Mutex<String>
    private let closed = Atomic<Bool>(false)
    /// Never changes once made (`AccountKey`).
    private let installationSecretValue: String
    /// Where commits are reported (`CommitReporting`).
    let commitReports: SQLiteCommitReports

    /// Opens (creating when missing) the store at `path` and migrates its schema.
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        var epoch = ""
        var secret = ""
        let reports = SQLiteCommitReports()
        commitReports = reports
        do {
            writer = try GroupCommitWriter(
                path: path, groupWritesMax: options.groupWritesMax, checkSeconds: Self.otherWritersCheckSeconds,
                prepare: { connection in
                    try SQLiteServerSchema.migrate(connection)
                    epoch = try SQLiteServerSchema.epoch(connection)
                    secret = try SQLiteServerSchema.installationSecret(connection)
                    reports.checkOtherWriters(connection)
                }, check: { connection in reports.checkOtherWriters(connection) })
            readers = try (0..<max(1, options.readers)).map { index in
                try SQLiteReader(path: path, label: "notesfs.server.reader.\(index)")
            }
        } catch {
            throw Self.storeError(error)
        }
        currentEpoch = Mutex(epoch)
        installationSecretValue = secret
    }

    /// The data file inside a server data directory.
    public static func databasePath(inDirectory directory: String) -> String {
        URL(fileURLWithPath: directory).appendingPathComponent("server.sqlite").path
    }

    private var reader: SQLiteReader {
        let index = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        return readers[index % readers.count]
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw ServerStoreError.unavailable("the store is closed") }
        do {
            return try await reader.read(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        do {
            return try await writer.write(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Turns any error into a `ServerStoreError`, so nothing above the store
    /// sees SQLite.
    static func storeError(_ error: any Error) -> any Error {
        if error is ServerStoreError { return error }
        if let error = error as? SQLiteError {
            if error.isBusy || error.isDiskFull {
                return ServerStoreError.unavailable(error.description)
            }
            return ServerStoreError.failure(error.description)
        }
        // Errors thrown by a push body (the processor's own) pass through.
        return error
    }

    // MARK: ServerStore

    public func epoch() async throws -> String {
        currentEpoch.withLock { $0 }
    }

    public func installationSecret() async throws -> String { installationSecretValue }

    public func newEpoch(now: Date) async throws -> String {
        let epoch = try await write { connection in
            let epoch = SQLiteServerSchema.makeEpoch()
            try connection.run("UPDATE server_meta SET value = ? WHERE key = 'epoch'", epoch)
            try connection.run(
                "UPDATE accounts SET counter = CASE WHEN ?2 > counter THEN ?2 ELSE counter + ?1 END", ServerEpoch.minimumGap,
                ServerEpoch.clockFloor(now: now))
            return epoch
        }
        currentEpoch.withLock { $0 = epoch }
        commitReports.report(.unknown)
        return epoch
    }

    public func counterTotal() async throws -> Int64 {
        try await read { connection in
            try connection.queryOne("SELECT ifnull(sum(counter), 0) FROM accounts", map: { $0.int64(0) }) ?? 0
        }
    }

    public func token(id: String) async throws -> TokenRecord? {
        try await read { connection in
            try connection.queryOne(
                """
                SELECT t.account_id, t.secret_hash, t.revoked_at IS NOT NULL OR a.revoked_at IS NOT NULL
                FROM tokens t JOIN accounts a ON a.account_id = t.account_id WHERE t.token_id = ?
                """, id
            ) { row in
                TokenRecord(
                    tokenID: id, account: AccountID(row.int64(0)), secretHash: Array(row.data(1)),
                    revoked: row.bool(2))
            }
        }
    }

    public func push<Result: Sendable>(
        account: AccountID, _ body: @escaping @Sendable (any PushTransaction) throws -> Result
    ) async throws -> Result {
        // Also when it failed: a commit whose outcome is unknown may have happened.
        defer { commitReports.report(.local(account)) }
        return try await write { connection in
            try body(SQLitePushTransaction(connection: connection, account: account))
        }
    }

    public func changes(account: AccountID, after: Int64, rowsMax: Int, bytesMax: Int) async throws -> FeedRead {
        try await read { connection in
            let head = try Self.head(connection, account: account)
            // Sizes first, so a page of large notes is cut before its bodies are read.
            let sizes = try connection.query(
                """
                SELECT version, length(name) + ifnull(length(body), 0) FROM entities
                WHERE account_id = ? AND version > ? ORDER BY version LIMIT ?
                """, account.rawValue, after, rowsMax + 1
            ) { row in (row.int64(0), row.int(1) + 200) }
            var last: Int64 = after
            var bytes = 0
            var count = 0
            for (version, size) in sizes.prefix(rowsMax) {
                if count > 0 && bytes + size > bytesMax { break }
                bytes += size
                count += 1
                last = version
            }
            let entities =
                count == 0
                ? []
                : try connection.query(
                    """
                    SELECT \(Self.entityColumns) FROM entities
                    WHERE account_id = ? AND version > ? AND version <= ? ORDER BY version
                    """, account.rawValue, after, last, map: Self.entity)
            return FeedRead(entities: entities, hasMore: sizes.count > count, head: head)
        }
    }

    public func head(account: AccountID) async throws -> FeedHead {
        try await read { connection in try Self.head(connection, account: account) }
    }

    public func index(account: AccountID, after: EntityRef?, rowsMax: Int) async throws -> IndexRead {
        try await read { connection in
            let head = try Self.head(connection, account: account)
            let start = after.map { ($0.kind.rawValue, UUIDText.format($0.id)) } ?? ("", "")
            var entries = try connection.query(
                """
                SELECT kind, id, version FROM entities
                WHERE account_id = ? AND (kind, id) > (?, ?) AND deleted = 0 ORDER BY kind, id LIMIT ?
                """, account.rawValue, start.0, start.1, rowsMax + 1
            ) { row in
                IndexEntry(kind: try Self.kind(row.string(0)), id: try Self.uuid(row.string(1)), version: row.int64(2))
            }
            let hasMore = entries.count > rowsMax
            if hasMore { entries.removeLast() }
            return IndexRead(entries: entries, hasMore: hasMore, head: head)
        }
    }

    public func entities(account: AccountID, refs: [EntityRef], bytesMax: Int) async throws -> FetchRead {
        try await read { connection in
            var read = FetchRead(found: [], notFound: [], omitted: [])
            var bytes = 0
            for ref in refs {
                let key: [any SQLBindable] = [account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id)]
                guard
                    let size = try connection.queryOne(
                        """
                        SELECT length(name) + ifnull(length(body), 0) FROM entities
                        WHERE account_id = ? AND kind = ? AND id = ?
                        """, arguments: key, map: { $0.int(0) + 200 })
                else {
                    read.notFound.append(ref)
                    continue
                }
                if !read.found.isEmpty && bytes + size > bytesMax {
                    read.omitted.append(ref)
                    continue
                }
                bytes += size
                if let entity = try connection.queryOne(
                    "SELECT \(Self.entityColumns) FROM entities WHERE account_id = ? AND kind = ? AND id = ?",
                    arguments: key, map: Self.entity)
                {
                    read.found.append(entity)
                }
            }
            return read
        }
    }

    public func createAccount(name: String, at date: Date) async throws -> AccountID {
        try await write { connection in
            if try connection.queryOne("SELECT 1 FROM accounts WHERE name = ?", name, map: { _ in true }) != nil {
                throw ServerStoreError.accountExists(name)
            }
            try connection.run(
                "INSERT INTO accounts(name, counter, purged_through, created_at) VALUES (?, 0, 0, ?)", name,
                Self.milliseconds(date))
            return AccountID(connection.lastInsertRowID)
        }
    }

    public func account(named name: String) async throws -> AccountSummary? {
        try await read { connection in
            try connection.queryOne("\(Self.summarySelect) WHERE a.name = ?", name, map: Self.summary)
        }
    }

    public func addToken(account: AccountID, tokenID: String, secretHash: [UInt8], at date: Date) async throws {
        try await write { connection in
            try connection.run(
                "INSERT INTO tokens(token_id, account_id, secret_hash, created_at) VALUES (?, ?, ?, ?)", tokenID,
                account.rawValue, secretHash, Self.milliseconds(date))
            try connection.run("UPDATE accounts SET revoked_at = NULL WHERE account_id = ?", account.rawValue)
        }
    }

    public func revokeAccount(name: String, at date: Date) async throws {
        try await write { connection in
            guard
                let id = try connection.queryOne(
                    "SELECT account_id FROM accounts WHERE name = ?", name, map: { $0.int64(0) })
            else { throw ServerStoreError.noSuchAccount(name) }
            let now = Self.milliseconds(date)
            try connection.run("UPDATE accounts SET revoked_at = ? WHERE account_id = ?", now, id)
            try connection.run(
                "UPDATE tokens SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL", now, id)
        }
    }

    public func tokens(accountName: String) async throws -> [TokenSummary] {
        try await read { connection in
            guard
                let id = try connection.queryOne(
                    "SELECT account_id FROM accounts WHERE name = ?", accountName, map: { $0.int64(0) })
            else { throw ServerStoreError.noSuchAccount(accountName) }
            return try connection.query(
                """
                SELECT token_id, created_at, last_used_at, revoked_at IS NOT NULL FROM tokens
                WHERE account_id = ? ORDER BY created_at, token_id
                """, id
            ) { row in
                TokenSummary(
                    tokenID: row.string(0), createdAt: Self.date(milliseconds: row.int64(1)),
                    lastUsedAt: row.optionalInt64(2).map { Self.date(milliseconds: $0) }, revoked: row.bool(3))
            }
        }
    }

    public func revokeToken(accountName: String, tokenID: String, at date: Date) async throws {
        try await write { connection in
            guard
                let id = try connection.queryOne(
                    "SELECT account_id FROM accounts WHERE name = ?", accountName, map: { $0.int64(0) })
            else { throw ServerStoreError.noSuchAccount(accountName) }
            try connection.run(
                "UPDATE tokens SET revoked_at = ifnull(revoked_at, ?) WHERE account_id = ? AND token_id = ?",
                Self.milliseconds(date), id, tokenID)
            guard connection.changes == 1 else {
                throw ServerStoreError.noSuchToken(account: accountName, token: tokenID)
            }
        }
    }

    public func recordTokenUse(tokenID: String, at date: Date) async throws {
        try await write { connection in
            try connection.run("UPDATE tokens SET last_used_at = ? WHERE token_id = ?", Self.milliseconds(date), tokenID)
        }
    }

    public func accounts() async throws -> [AccountSummary] {
        try await read { connection in
            try connection.query("\(Self.summarySelect) ORDER BY a.name", map: Self.summary)
        }
    }

    public func accountCount() async throws -> Int {
        try await read { connection in
            try connection.queryOne("SELECT count(*) FROM accounts", map: { $0.int(0) }) ?? 0
        }
    }

    public func purge(before date: Date) async throws -> PurgeReport {
        try await write { connection in
            let cutoff = Self.milliseconds(date)
            try connection.run(
                """
                UPDATE accounts SET purged_through = max(purged_through, ifnull((
                    SELECT max(version) FROM entities e
                    WHERE e.account_id = accounts.account_id AND e.deleted = 1 AND e.updated_at < ?), 0))
                """, cutoff)
            // The history of a removed tombstone goes with it: a tree before
            // the deletion is no longer whole.
            try connection.run(
                """
                UPDATE accounts SET history_since = max(history_since, ifnull((
                    SELECT max(v.replaced_at) FROM entities e JOIN entity_versions v
                        ON v.account_id = e.account_id AND v.kind = e.kind AND v.id = e.id
                    WHERE e.account_id = accounts.account_id AND e.deleted = 1 AND e.updated_at < ?), 0))
                """, cutoff)
            try connection.run(
                """
                DELETE FROM entity_versions WHERE (account_id, kind, id) IN (
                    SELECT account_id, kind, id FROM entities WHERE deleted = 1 AND updated_at < ?)
                """, cutoff)
            try connection.run("DELETE FROM entities WHERE deleted = 1 AND updated_at < ?", cutoff)
            let tombstones = connection.changes
            try connection.run("DELETE FROM seen_changes WHERE created_at < ?", cutoff)
            return PurgeReport(tombstones: tombstones, changeIds: connection.changes)
        }
    }

    public func close() async {
        closed.store(true, ordering: .releasing)
        writer.stop()
    }

    // MARK: Rows

    static let entityColumns = "kind, id, version, change_id, deleted, name, body, parent_id, updated_at"

    static func entity(_ row: Row) throws -> StoredEntity {
        guard let changeId = ChangeID(row.string(3)) else {
            throw ServerStoreError.failure("stored change id '\(row.string(3))' is not a UUID")
        }
        return StoredEntity(
            ref: EntityRef(kind: try kind(row.string(0)), id: try uuid(row.string(1))),
            version: row.int64(2), changeId: changeId, deleted: row.bool(4), name: row.string(5),
            body: row.data(6), parentId: try row.optionalString(7).map(uuid),
            updatedAt: date(milliseconds: row.int64(8)))
    }

    static func kind(_ text: String) throws -> EntityKind {
        guard let kind = EntityKind(rawValue: text) else {
            throw ServerStoreError.failure("stored entity kind '\(text)' is unknown")
        }
        return kind
    }

    static func uuid(_ text: String) throws -> UUID {
        guard let uuid = UUIDText.parse(text) else {
            throw ServerStoreError.failure("stored id '\(text)' is not a UUID")
        }
        return uuid
    }

    static let summarySelect = """
        SELECT a.account_id, a.name, a.counter,
            (SELECT count(*) FROM tokens t WHERE t.account_id = a.account_id AND t.revoked_at IS NULL),
            (SELECT count(*) FROM entities e WHERE e.account_id = a.account_id AND e.deleted = 0),
            a.created_at, a.revoked_at IS NOT NULL
        FROM accounts a
        """

    static func summary(_ row: Row) -> AccountSummary {
        AccountSummary(
            id: AccountID(row.int64(0)), name: row.string(1), counter: row.int64(2), liveTokens: row.int(3),
            liveEntities: row.int(4), createdAt: date(milliseconds: row.int64(5)), revoked: row.bool(6))
    }

    static func head(_ connection: Connection, account: AccountID) throws -> FeedHead {
        try connection.queryOne(
            "SELECT counter, purged_through FROM accounts WHERE account_id = ?", account.rawValue
        ) { row in FeedHead(counter: row.int64(0), purgedThrough: row.int64(1)) }
            ?? FeedHead(counter: 0, purgedThrough: 0)
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

/// The SQLite side of one push: statements on the writer's connection, inside
/// the group transaction. Used on the writer thread only.
final class SQLitePushTransaction: PushTransaction {
    let connection: Connection
    let account: AccountID

    init(connection: Connection, account: AccountID) {
        self.connection = connection
        self.account = account
    }

    func lockAccount() throws -> Int64 {
        // BEGIN IMMEDIATE already holds the database write lock.
        guard
            let counter = try connection.queryOne(
                "SELECT counter FROM accounts WHERE account_id = ?", account.rawValue, map: { $0.int64(0) })
        else { throw ServerStoreError.failure("account \(account) does not exist") }
        return counter
    }

    func idempotencyRecords(_ changeIds: [ChangeID]) throws -> [ChangeID: IdempotencyRecord] {
        var records: [ChangeID: IdempotencyRecord] = [:]
        for changeId in changeIds {
            if let record = try connection.queryOne(
                "SELECT payload_hash, result, created_at FROM seen_changes WHERE account_id = ? AND change_id = ?",
                account.rawValue, changeId.description,
                map: { row in
                    IdempotencyRecord(
                        changeId: changeId, payloadHash: Array(row.data(0)), result: row.data(1),
                        createdAt: SQLiteServerStore.date(milliseconds: row.int64(2)))
                })
            {
                records[changeId] = record
            }
        }
        return records
    }

    func lockEntities(_ refs: [EntityRef]) throws -> [EntityRef: StoredEntity] {
        var entities: [EntityRef: StoredEntity] = [:]
        for ref in refs {
            if let entity = try entity(ref) { entities[ref] = entity }
        }
        return entities
    }

    func entity(_ ref: EntityRef) throws -> StoredEntity? {
        try connection.queryOne(
            """
            SELECT \(SQLiteServerStore.entityColumns) FROM entities
            WHERE account_id = ? AND kind = ? AND id = ?
            """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id), map: SQLiteServerStore.entity)
    }

    func write(_ entity: StoredEntity, replacing previous: StoredEntity?) throws {
        let kind = entity.ref.kind.rawValue
        let id = UUIDText.format(entity.ref.id)
        let now = SQLiteServerStore.milliseconds(entity.updatedAt)
        if previous != nil {
            // Copied inside SQLite, so the old body is never read into memory.
            try connection.run(
                """
                INSERT INTO entity_versions(
                    account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device,
                    replaced_at)
                SELECT account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device, ?4
                FROM entities WHERE account_id = ?1 AND kind = ?2 AND id = ?3
                """, account.rawValue, kind, id, now)
        }
        try connection.run(
            """
            INSERT INTO entities(account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(account_id, kind, id) DO UPDATE SET
                version = excluded.version, change_id = excluded.change_id, deleted = excluded.deleted,
                name = excluded.name, body = excluded.body, parent_id = excluded.parent_id,
                updated_at = excluded.updated_at, device = excluded.device
            """,
            arguments: [
                account.rawValue, kind, id, entity.version, entity.changeId.description, entity.deleted, entity.name,
                entity.body, entity.parentId.map { UUIDText.format($0) }, now, entity.device?.description,
            ])
    }

    func remember(_ record: IdempotencyRecord) throws {
        try connection.run(
            "INSERT INTO seen_changes(account_id, change_id, payload_hash, result, created_at) VALUES (?, ?, ?, ?, ?)",
            account.rawValue, record.changeId.description, record.payloadHash, record.result,
            SQLiteServerStore.milliseconds(record.createdAt))
    }

    func setCounter(_ counter: Int64) throws {
        try connection.run("UPDATE accounts SET counter = ? WHERE account_id = ?", counter, account.rawValue)
    }
}
