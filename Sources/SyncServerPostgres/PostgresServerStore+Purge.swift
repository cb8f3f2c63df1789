import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// Retention: tombstones and remembered change ids past their period, one
/// short transaction per account.
extension PostgresServerStore {
    public func purge(before date: Date) async throws -> PurgeReport {
        let cutoff = Self.milliseconds(date)
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
}
