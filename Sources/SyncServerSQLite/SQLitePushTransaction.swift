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
            SELECT \(SQLiteServerStore.currentColumns) FROM \(SQLiteServerStore.currentVersions)
            WHERE e.account_id = ? AND e.kind = ? AND e.id = ?
            """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id), map: SQLiteServerStore.entity)
    }

    /// The version's row, body and all, is written once; `entities` only
    /// points at it (schema 6).
    func write(_ entity: StoredEntity, replacing previous: StoredEntity?) throws {
        let kind = entity.ref.kind.rawValue
        let id = UUIDText.format(entity.ref.id)
        let now = SQLiteServerStore.milliseconds(entity.updatedAt)
        let parentId = entity.parentId.map { UUIDText.format($0) }
        let changeId = entity.changeId.description
        let device = entity.device?.description
        try connection.run(
            """
            INSERT INTO entity_versions(
                account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device, replaces)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            arguments: [
                account.rawValue, kind, id, entity.version, changeId, entity.deleted, entity.name,
                entity.body, parentId, now, device, previous?.version,
            ])
        try connection.run(
            """
            INSERT INTO entities(account_id, kind, id, version, change_id, deleted, name, parent_id, updated_at, device)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(account_id, kind, id) DO UPDATE SET
                version = excluded.version, change_id = excluded.change_id, deleted = excluded.deleted,
                name = excluded.name, parent_id = excluded.parent_id,
                updated_at = excluded.updated_at, device = excluded.device
            """,
            arguments: [
                account.rawValue, kind, id, entity.version, changeId, entity.deleted, entity.name, parentId, now,
                device,
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
