import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer

/// The history of the SQLite store: `entity_versions` holds every replaced
/// version (moved there by `SQLitePushTransaction.write`, in the push's
/// transaction); the current version of each entity stays in `entities`.
extension SQLiteServerStore {
    public func versions(account: AccountID, ref: EntityRef, before: Int64?, rowsMax: Int) async throws
        -> VersionsRead
    {
        try await read { connection in
            let keptSince = try Self.keptSince(connection, account: account)
            // Lengths inside each branch: SQLite then never reads the bodies.
            var versions = try connection.query(
                """
                SELECT version, change_id, deleted, name, length(body), parent_id, updated_at, device FROM (
                    SELECT version, change_id, deleted, name, body, parent_id, updated_at, device FROM entities
                    WHERE account_id = ?1 AND kind = ?2 AND id = ?3 AND version < ?4
                    UNION ALL
                    SELECT version, change_id, deleted, name, body, parent_id, updated_at, device FROM entity_versions
                    WHERE account_id = ?1 AND kind = ?2 AND id = ?3 AND version < ?4)
                ORDER BY version DESC LIMIT ?5
                """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id), before ?? Int64.max, rowsMax + 1
            ) { row in try Self.versionRecord(row, ref: ref, body: nil) }
            let hasMore = versions.count > rowsMax
            if hasMore { versions.removeLast() }
            return VersionsRead(versions: versions, hasMore: hasMore, keptSince: keptSince)
        }
    }

    public func version(account: AccountID, ref: EntityRef, version: Int64) async throws -> VersionRecord? {
        try await read { connection in
            try connection.queryOne(
                """
                SELECT version, change_id, deleted, name, length(body), parent_id, updated_at, device, body FROM entities
                WHERE account_id = ?1 AND kind = ?2 AND id = ?3 AND version = ?4
                UNION ALL
                SELECT version, change_id, deleted, name, length(body), parent_id, updated_at, device, body
                FROM entity_versions WHERE account_id = ?1 AND kind = ?2 AND id = ?3 AND version = ?4
                """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id), version
            ) { row in try Self.versionRecord(row, ref: ref, body: 8) }
        }
    }

    public func tree(
        account: AccountID, at: Date, after: EntityRef?, rowsMax: Int, bytesMax: Int, bodies: Bool
    ) async throws -> TreeRead {
        try await read { connection in
            let keptSince = try Self.keptSince(connection, account: account)
            // As times are stored: whole milliseconds, rounded down.
            let time = Self.milliseconds(at)
            let start = after.map { ($0.kind.rawValue, UUIDText.format($0.id)) } ?? ("", "")
            // Which version each entity had at `at`: its current row (read
            // here, without the body) when that was made by then, else the
            // replaced version in force then.
            let candidates = try connection.query(
                """
                SELECT e.kind, e.id, e.updated_at <= ?2, CASE WHEN e.updated_at <= ?2 THEN NULL ELSE (
                    SELECT max(v.version) FROM entity_versions v
                    WHERE v.account_id = e.account_id AND v.kind = e.kind AND v.id = e.id
                        AND v.updated_at <= ?2 AND v.replaced_at > ?2) END,
                    e.version, e.change_id, e.deleted, e.name, length(e.body), e.parent_id, e.updated_at, e.device
                FROM entities e WHERE e.account_id = ?1 AND (e.kind, e.id) > (?3, ?4)
                ORDER BY e.kind, e.id LIMIT ?5
                """, account.rawValue, time, start.0, start.1, rowsMax + 1
            ) { row in
                let ref = EntityRef(kind: try Self.kind(row.string(0)), id: try Self.uuid(row.string(1)))
                let current = row.bool(2)
                return (
                    ref: ref, current: current ? try Self.versionRecord(row, ref: ref, body: nil, from: 4) : nil,
                    past: row.optionalInt64(3)
                )
            }
            var entries: [(record: VersionRecord, fromHistory: Bool)] = []
            var last: EntityRef?
            var bytes = 0
            var cut = false
            for candidate in candidates.prefix(rowsMax) {
                let found: VersionRecord?
                if let current = candidate.current {
                    found = current
                } else if let past = candidate.past {
                    found = try Self.historyRow(connection, account: account, ref: candidate.ref, version: past)
                } else {
                    found = nil
                }
                if let found, !found.deleted {
                    let estimate = found.sizeEstimate(withBody: bodies)
                    if !entries.isEmpty && bytes + estimate > bytesMax {
                        cut = true
                        break
                    }
                    bytes += estimate
                    entries.append((found, candidate.current == nil))
                }
                last = candidate.ref
            }
            let records = try entries.map { entry in
                var record = entry.record
                if bodies, record.ref.kind == .note {
                    record.body = try Self.body(connection, account: account, entry)
                }
                return record
            }
            return TreeRead(
                entries: records, last: last, hasMore: cut || candidates.count > rowsMax, keptSince: keptSince)
        }
    }

    public func historyAccounts() async throws -> [AccountID] {
        try await read { connection in
            try connection.query("SELECT DISTINCT account_id FROM entity_versions ORDER BY account_id") { row in
                AccountID(row.int64(0))
            }
        }
    }

    public func trimHistory(account: AccountID, replacedBefore: Date, budget: HistoryBudget, versionsMax: Int)
        async throws -> HistoryTrimReport
    {
        let id = account.rawValue
        let cutoff = Self.milliseconds(replacedBefore)
        // Versions replaced before the period, found by the (account, replaced_at) index.
        var report = try await write { connection in
            let expired = try connection.query(
                """
                SELECT rowid, length(name) + ifnull(length(body), 0), replaced_at FROM entity_versions
                WHERE account_id = ? AND replaced_at < ? ORDER BY replaced_at LIMIT ?
                """, id, cutoff, versionsMax, map: Self.trimmable)
            return try Self.remove(expired, account: id, connection)
        }
        guard report.versions < versionsMax else { return report }
        // Weighed on a read connection: the writer, and every push, never waits on the sums.
        let (live, held) = try await read { connection in
            let live = try connection.queryOne(
                "SELECT ifnull(sum(length(name) + ifnull(length(body), 0)), 0) FROM entities WHERE account_id = ? AND deleted = 0",
                id, map: { $0.int64(0) })
            let held = try connection.queryOne(
                "SELECT ifnull(sum(length(name) + ifnull(length(body), 0)), 0) FROM entity_versions WHERE account_id = ?",
                id, map: { $0.int64(0) })
            return (live ?? 0, held ?? 0)
        }
        let excess = held - budget.bytesMax(liveBytes: live)
        guard excess > 0 else {
            report.done = true
            return report
        }
        let room = versionsMax - report.versions
        let step = try await write { connection in
            // Oldest first; never the last text of a note deleted now.
            let oldest = try connection.query(
                """
                SELECT v.rowid, length(v.name) + ifnull(length(v.body), 0), v.replaced_at FROM entity_versions v
                WHERE v.account_id = ?1 AND NOT (
                    v.deleted = 0
                    AND EXISTS (SELECT 1 FROM entities e
                        WHERE e.account_id = v.account_id AND e.kind = v.kind AND e.id = v.id AND e.deleted = 1)
                    AND NOT EXISTS (SELECT 1 FROM entity_versions w
                        WHERE w.account_id = v.account_id AND w.kind = v.kind AND w.id = v.id
                            AND w.version > v.version AND w.deleted = 0))
                ORDER BY v.replaced_at, v.version LIMIT ?2
                """, id, room, map: Self.trimmable)
            var left = excess
            var chosen: [Trimmable] = []
            for row in oldest where left > 0 {
                chosen.append(row)
                left -= row.size
            }
            var removed = try Self.remove(chosen, account: id, connection)
            removed.done = left <= 0 || oldest.count < room
            return removed
        }
        report.versions += step.versions
        report.bytes += step.bytes
        report.done = step.done
        return report
    }

    /// A history row trimming may remove.
    typealias Trimmable = (rowid: Int64, size: Int64, replacedAt: Int64)

    private static func trimmable(_ row: Row) -> Trimmable {
        (rowid: row.int64(0), size: row.int64(1), replacedAt: row.int64(2))
    }

    /// Deletes `rows` and moves the account's `history_since` past them.
    private static func remove(_ rows: [Trimmable], account: Int64, _ connection: Connection) throws
        -> HistoryTrimReport
    {
        var report = HistoryTrimReport(done: false)
        for row in rows {
            try connection.run("DELETE FROM entity_versions WHERE rowid = ?", row.rowid)
            report.versions += 1
            report.bytes += row.size
        }
        if let newest = rows.map(\.replacedAt).max() {
            try connection.run(
                "UPDATE accounts SET history_since = max(history_since, ?) WHERE account_id = ?", newest, account)
        }
        return report
    }

    // MARK: Rows

    /// Where the account's history is whole from; nil when it always was.
    static func keptSince(_ connection: Connection, account: AccountID) throws -> Date? {
        let since = try connection.queryOne(
            "SELECT history_since FROM accounts WHERE account_id = ?", account.rawValue, map: { $0.int64(0) })
        guard let since, since > 0 else { return nil }
        return date(milliseconds: since)
    }

    /// A replaced version, without its body.
    static func historyRow(_ connection: Connection, account: AccountID, ref: EntityRef, version: Int64) throws
        -> VersionRecord?
    {
        try connection.queryOne(
            """
            SELECT version, change_id, deleted, name, length(body), parent_id, updated_at, device
            FROM entity_versions WHERE account_id = ? AND kind = ? AND id = ? AND version = ?
            """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id), version
        ) { row in try versionRecord(row, ref: ref, body: nil) }
    }

    private static func body(
        _ connection: Connection, account: AccountID, _ entry: (record: VersionRecord, fromHistory: Bool)
    ) throws -> Data {
        let key: [any SQLBindable] = [
            account.rawValue, entry.record.ref.kind.rawValue, UUIDText.format(entry.record.ref.id),
            entry.record.version,
        ]
        let table = entry.fromHistory ? "entity_versions" : "entities"
        return try connection.queryOne(
            "SELECT body FROM \(table) WHERE account_id = ? AND kind = ? AND id = ? AND version = ?",
            arguments: key, map: { $0.data(0) }) ?? Data()
    }

    /// A version from the columns version, change_id, deleted, name,
    /// length(body), parent_id, updated_at, device starting at column
    /// `first` (and the body at `body`).
    static func versionRecord(_ row: Row, ref: EntityRef, body: Int?, from first: Int = 0) throws -> VersionRecord {
        guard let changeId = ChangeID(row.string(first + 1)) else {
            throw ServerStoreError.failure("stored change id '\(row.string(first + 1))' is not a UUID")
        }
        let device = try row.optionalString(first + 7).map { text in
            guard let device = DeviceID(text) else {
                throw ServerStoreError.failure("stored device id '\(text)' is not a UUID")
            }
            return device
        }
        return VersionRecord(
            ref: ref, version: row.int64(first), changeId: changeId, deleted: row.bool(first + 2),
            name: row.string(first + 3), body: body.map { row.data($0) } ?? Data(),
            size: row.optionalInt64(first + 4).map { Int($0) } ?? 0,
            parentId: try row.optionalString(first + 5).map(uuid), time: date(milliseconds: row.int64(first + 6)),
            device: device)
    }
}
