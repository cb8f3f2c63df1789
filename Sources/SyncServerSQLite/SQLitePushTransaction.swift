import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer

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
