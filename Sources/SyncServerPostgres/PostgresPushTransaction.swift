import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// The PostgreSQL side of one push in an *isolated* group (see
/// `PostgresGroupWriter`): statements on the writer's connection inside the
/// push's own savepoint, in the lock order of DESIGN.md. Used on the writer
/// thread only, and never outlives the push.
final class PostgresPushTransaction: PushTransaction {
    let connection: PostgresConnection
    let account: AccountID
    /// True once `setCounter` ran: the push applied something.
    private(set) var counterChanged = false

    init(connection: PostgresConnection, account: AccountID) {
        self.connection = connection
        self.account = account
    }

    func lockAccount() throws -> Int64 {
        let rows = try connection.execute(
            "SELECT counter FROM accounts WHERE account_id = $1 FOR UPDATE", account.rawValue)
        guard rows.rowCount == 1 else { throw ServerStoreError.failure("account \(account) does not exist") }
        return try rows.int64(0, 0)
    }

    func idempotencyRecords(_ changeIds: [ChangeID]) throws -> [ChangeID: IdempotencyRecord] {
        try Self.records(changeIds, of: account, on: connection)
    }

    func lockEntities(_ refs: [EntityRef]) throws -> [EntityRef: StoredEntity] {
        try Self.lockRows(refs, of: account, on: connection)
    }

    func entity(_ ref: EntityRef) throws -> StoredEntity? {
        try Self.row(ref, of: account, on: connection)
    }

    // MARK: The statements, shared with the optimistic group's lookups of rows it did not prefetch

    /// The remembered answers among `changeIds` of `account`.
    static func records(
        _ changeIds: [ChangeID], of account: AccountID, on connection: PostgresConnection
    ) throws -> [ChangeID: IdempotencyRecord] {
        guard !changeIds.isEmpty else { return [:] }
        let rows = try connection.execute(
            """
            SELECT change_id, payload_hash, result, created_at FROM seen_changes
            WHERE account_id = $1 AND change_id = ANY($2)
            """, account.rawValue, PostgresValue.array(.uuid(changeIds.map(\.uuid))))
        var records: [ChangeID: IdempotencyRecord] = [:]
        for row in 0..<rows.rowCount {
            let changeId = ChangeID(try rows.uuid(row, 0))
            records[changeId] = IdempotencyRecord(
                changeId: changeId, payloadHash: Array(try rows.data(row, 1)), result: try rows.data(row, 2),
                createdAt: PostgresServerStore.date(milliseconds: try rows.int64(row, 3)))
        }
        return records
    }

    /// Locks the existing rows among `refs` of `account` (`FOR UPDATE`) and returns them.
    static func lockRows(
        _ refs: [EntityRef], of account: AccountID, on connection: PostgresConnection
    ) throws -> [EntityRef: StoredEntity] {
        guard !refs.isEmpty else { return [:] }
        // Rows are locked in the sort's order: (kind, id), as on every backend.
        let rows = try connection.execute(
            """
            SELECT \(PostgresServerStore.entityColumns)
            FROM entities e JOIN unnest($2::text[], $3::uuid[]) AS r(kind, id) ON e.kind = r.kind AND e.id = r.id
            WHERE e.account_id = $1
            ORDER BY e.kind, e.id
            FOR UPDATE OF e
            """, account.rawValue, PostgresValue.array(.text(refs.map(\.kind.rawValue))),
            PostgresValue.array(.uuid(refs.map(\.id))))
        var entities: [EntityRef: StoredEntity] = [:]
        for row in 0..<rows.rowCount {
            let entity = try PostgresServerStore.entity(rows, row, from: 0)
            entities[entity.ref] = entity
        }
        return entities
    }

    /// The row of `ref` of `account`, unlocked, or nil.
    static func row(_ ref: EntityRef, of account: AccountID, on connection: PostgresConnection) throws -> StoredEntity? {
        let rows = try connection.execute(
            """
            SELECT \(PostgresServerStore.entityColumns) FROM entities e
            WHERE e.account_id = $1 AND e.kind = $2 AND e.id = $3::uuid
            """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id))
        return rows.rowCount == 0 ? nil : try PostgresServerStore.entity(rows, 0, from: 0)
    }

    /// Rows written and answers remembered, sent in one statement by `flush`
    /// (reads inside the push never need them: `PushProcessor` keeps what it
    /// wrote in its own map, and each entity is written at most once).
    private var writes: [StoredEntity] = []
    /// Writes that replace a row, whose old row moves into the history.
    private var superseded: [StoredEntity] = []
    private var records: [IdempotencyRecord] = []
    private var newCounter: Int64?

    func write(_ entity: StoredEntity, replacing previous: StoredEntity?) throws {
        writes.append(entity)
        if previous != nil { superseded.append(entity) }
    }

    func remember(_ record: IdempotencyRecord) throws {
        records.append(record)
    }

    func setCounter(_ counter: Int64) throws {
        newCounter = counter
        counterChanged = true
    }

    /// Sends the buffered rows, answers and counter as one statement of
    /// data-modifying CTEs: one round trip instead of one per row. Runs inside
    /// the push's transaction, before `COMMIT`.
    func flush() throws {
        guard !writes.isEmpty || !records.isEmpty || newCounter != nil else { return }
        var arguments: [PostgresValue] = [.int(account.rawValue)]
        func placeholder(_ value: PostgresValue) -> String {
            arguments.append(value)
            return "$\(arguments.count)"
        }
        var parts: [String] = []
        if !writes.isEmpty {
            let rows = writes.map { entity in
                "($1, \(placeholder(.text(entity.ref.kind.rawValue))), \(placeholder(.text(UUIDText.format(entity.ref.id))))::uuid, "
                    + "\(placeholder(.int(entity.version))), \(placeholder(.text(entity.changeId.description)))::uuid, "
                    + "\(placeholder(.bool(entity.deleted))), \(placeholder(.text(entity.name))), \(placeholder(.bytes(entity.body))), "
                    + "\(placeholder(entity.parentId.map { .text(UUIDText.format($0)) } ?? .null))::uuid, "
                    + "\(placeholder(.int(PostgresServerStore.milliseconds(entity.updatedAt)))), "
                    + "\(placeholder(entity.device.map { .text($0.description) } ?? .null))::uuid)"
            }
            if !superseded.isEmpty {
                // Every part of one statement reads the snapshot from before
                // it, so this copies the rows `written` replaces.
                let kinds = placeholder(.array(.text(superseded.map(\.ref.kind.rawValue))))
                let ids = placeholder(.array(.uuid(superseded.map(\.ref.id))))
                let times = placeholder(
                    .array(.int64(superseded.map { PostgresServerStore.milliseconds($0.updatedAt) })))
                parts.append(
                    """
                    superseded AS (
                        INSERT INTO entity_versions(account_id, kind, id, version, change_id, deleted, name, body,
                            parent_id, updated_at, device, replaced_at)
                        SELECT e.account_id, e.kind, e.id, e.version, e.change_id, e.deleted, e.name, e.body,
                            e.parent_id, e.updated_at, e.device, r.replaced_at
                        FROM unnest(\(kinds)::text[], \(ids)::uuid[], \(times)::int8[]) AS r(kind, id, replaced_at)
                        JOIN entities e ON e.account_id = $1 AND e.kind = r.kind AND e.id = r.id)
                    """)
            }
            parts.append(
                """
                written AS (
                    INSERT INTO entities(account_id, kind, id, version, change_id, deleted, name, body, parent_id,
                        updated_at, device)
                    VALUES \(rows.joined(separator: ", "))
                    ON CONFLICT (account_id, kind, id) DO UPDATE SET
                        version = excluded.version, change_id = excluded.change_id, deleted = excluded.deleted,
                        name = excluded.name, body = excluded.body, parent_id = excluded.parent_id,
                        updated_at = excluded.updated_at, device = excluded.device)
                """)
        }
        if !records.isEmpty {
            let rows = records.map { record in
                "($1, \(placeholder(.text(record.changeId.description)))::uuid, \(placeholder(.bytes(Data(record.payloadHash)))), "
                    + "\(placeholder(.bytes(record.result))), \(placeholder(.int(PostgresServerStore.milliseconds(record.createdAt)))))"
            }
            parts.append(
                """
                remembered AS (
                    INSERT INTO seen_changes(account_id, change_id, payload_hash, result, created_at)
                    VALUES \(rows.joined(separator: ", ")))
                """)
        }
        let main =
            newCounter.map { "UPDATE accounts SET counter = \(placeholder(.int($0))) WHERE account_id = $1" }
            ?? "SELECT 1"
        let sql = parts.isEmpty ? main : "WITH " + parts.joined(separator: ", ") + " " + main
        try connection.execute(sql, arguments: arguments)
        writes = []
        superseded = []
        records = []
        newCounter = nil
    }
}
