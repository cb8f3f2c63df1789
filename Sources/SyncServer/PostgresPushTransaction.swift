import Foundation
import NotesModel
import PostgresKit
import SyncProtocol

/// The PostgreSQL side of one push: statements on one pooled connection
/// inside its transaction, in the lock order of DESIGN.md. Used on that
/// connection's queue only, and never outlives the push.
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
        guard !changeIds.isEmpty else { return [:] }
        let rows = try connection.execute(
            """
            SELECT change_id, payload_hash, result, created_at FROM seen_changes
            WHERE account_id = $1 AND change_id = ANY($2::uuid[])
            """, account.rawValue, "{" + changeIds.map(\.description).joined(separator: ",") + "}")
        var records: [ChangeID: IdempotencyRecord] = [:]
        for row in 0..<rows.rowCount {
            let changeId = ChangeID(try rows.uuid(row, 0))
            records[changeId] = IdempotencyRecord(
                changeId: changeId, payloadHash: Array(try rows.data(row, 1)), result: try rows.data(row, 2),
                createdAt: SQLiteServerStore.date(milliseconds: try rows.int64(row, 3)))
        }
        return records
    }

    func lockEntities(_ refs: [EntityRef]) throws -> [EntityRef: StoredEntity] {
        guard !refs.isEmpty else { return [:] }
        let (kinds, ids) = PostgresServerStore.arrays(refs)
        // Rows are locked in the sort's order: (kind, id), as on every backend.
        let rows = try connection.execute(
            """
            SELECT \(PostgresServerStore.entityColumns)
            FROM entities e JOIN unnest($2::text[], $3::uuid[]) AS r(kind, id) ON e.kind = r.kind AND e.id = r.id
            WHERE e.account_id = $1
            ORDER BY e.kind, e.id
            FOR UPDATE OF e
            """, account.rawValue, kinds, ids)
        var entities: [EntityRef: StoredEntity] = [:]
        for row in 0..<rows.rowCount {
            let entity = try PostgresServerStore.entity(rows, row, from: 0)
            entities[entity.ref] = entity
        }
        return entities
    }

    func entity(_ ref: EntityRef) throws -> StoredEntity? {
        let rows = try connection.execute(
            """
            SELECT \(PostgresServerStore.entityColumns) FROM entities e
            WHERE e.account_id = $1 AND e.kind = $2 AND e.id = $3::uuid
            """, account.rawValue, ref.kind.rawValue, ref.id.uuidString.lowercased())
        return rows.rowCount == 0 ? nil : try PostgresServerStore.entity(rows, 0, from: 0)
    }

    func write(_ entity: StoredEntity) throws {
        try connection.execute(
            """
            INSERT INTO entities(account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at)
            VALUES ($1, $2, $3::uuid, $4, $5::uuid, $6, $7, $8, $9::uuid, $10)
            ON CONFLICT (account_id, kind, id) DO UPDATE SET
                version = excluded.version, change_id = excluded.change_id, deleted = excluded.deleted,
                name = excluded.name, body = excluded.body, parent_id = excluded.parent_id,
                updated_at = excluded.updated_at
            """,
            arguments: [
                .int(account.rawValue), .text(entity.ref.kind.rawValue), .text(entity.ref.id.uuidString.lowercased()),
                .int(entity.version), .text(entity.changeId.description), .bool(entity.deleted), .text(entity.name),
                .bytes(entity.body), entity.parentId.map { .text($0.uuidString.lowercased()) } ?? .null,
                .int(SQLiteServerStore.milliseconds(entity.updatedAt)),
            ])
    }

    func remember(_ record: IdempotencyRecord) throws {
        try connection.execute(
            """
            INSERT INTO seen_changes(account_id, change_id, payload_hash, result, created_at)
            VALUES ($1, $2::uuid, $3, $4, $5)
            """, account.rawValue, record.changeId.description, record.payloadHash, record.result,
            SQLiteServerStore.milliseconds(record.createdAt))
    }

    func setCounter(_ counter: Int64) throws {
        try connection.execute("UPDATE accounts SET counter = $1 WHERE account_id = $2", counter, account.rawValue)
        counterChanged = true
    }
}
