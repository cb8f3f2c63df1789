import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer

/// Retention: tombstones and remembered change ids past their period.
extension SQLiteServerStore {
    public func purge(before date: Date) async throws -> PurgeReport {
        try await write { connection in
            let cutoff = Self.milliseconds(date)
            try connection.run(
                """
                UPDATE accounts SET purged_through = max(purged_through, ifnull((
                    SELECT max(version) FROM entities e
                    WHERE e.account_id = accounts.account_id AND e.deleted = 1 AND e.updated_at < ?), 0))
                """, cutoff)
            // The history of a removed tombstone goes with it (every version,
            // the tombstone's own row too): a tree before the deletion is no
            // longer whole from the latest replacement on.
            try connection.run(
                """
                UPDATE accounts SET history_since = max(history_since, ifnull((
                    SELECT max(w.updated_at) FROM entities e JOIN entity_versions w
                        ON w.account_id = e.account_id AND w.kind = e.kind AND w.id = e.id
                    WHERE e.account_id = accounts.account_id AND e.deleted = 1 AND e.updated_at < ?
                        AND w.replaces IS NOT NULL), 0))
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
}
