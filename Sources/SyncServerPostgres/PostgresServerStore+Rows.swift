import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// Rows read back into records, shared by the store's reads, the group
/// writer and the history.
extension PostgresServerStore {
    static let entityColumns =
        "e.kind, e.id, e.version, e.change_id, e.deleted, e.name, e.body, e.parent_id, e.updated_at"

    /// An entity from nine columns starting at `first`, in `entityColumns` order.
    static func entity(_ rows: PostgresResult, _ row: Int, from first: Int) throws -> StoredEntity {
        StoredEntity(
            ref: EntityRef(kind: try kind(try rows.string(row, first)), id: try rows.uuid(row, first + 1)),
            version: try rows.int64(row, first + 2), changeId: ChangeID(try rows.uuid(row, first + 3)),
            deleted: try rows.bool(row, first + 4), name: try rows.string(row, first + 5),
            body: try rows.data(row, first + 6), parentId: try rows.optionalUUID(row, first + 7),
            updatedAt: Self.date(milliseconds: try rows.int64(row, first + 8)))
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
            createdAt: Self.date(milliseconds: try rows.int64(row, 5)), revoked: try rows.bool(row, 6))
    }
}
