import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer

/// Rows read back into records, shared by the store's reads and the push.
extension SQLiteServerStore {
    /// Each entity's current row with its version's body (schema 6 keeps
    /// bodies only in `entity_versions`); read with `currentColumns`.
    static let currentVersions = """
        entities e JOIN entity_versions v
            ON v.account_id = e.account_id AND v.kind = e.kind AND v.id = e.id AND v.version = e.version
        """
    /// The columns `entity(_:)` reads, from `currentVersions`.
    static let currentColumns =
        "e.kind, e.id, e.version, e.change_id, e.deleted, e.name, v.body, e.parent_id, e.updated_at"

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
}
