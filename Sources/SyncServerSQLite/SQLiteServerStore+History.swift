import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer

/// The history of the SQLite store: `entity_versions` holds every version,
/// the current one too, each written once by `SQLitePushTransaction.write`;
/// `entities` points at each entity's current version. A version was
/// replaced when the row naming it in `replaces` was made (its `updated_at`).
extension SQLiteServerStore {
    public func versions(account: AccountID, ref: EntityRef, before: Int64?, rowsMax: Int) async throws
        -> VersionsRead
    {
        try await read { connection in
            let keptSince = try Self.keptSince(connection, account: account)
            var versions = try connection.query(
                """
                SELECT version, change_id, deleted, name, length(body), parent_id, updated_at, device
                FROM entity_versions WHERE account_id = ?1 AND kind = ?2 AND id = ?3 AND version < ?4
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
            // replaced version in force then: made by then, and replaced
            // (its successor made) after.
            let candidates = try connection.query(
                """
                SELECT e.kind, e.id, e.updated_at <= ?2, CASE WHEN e.updated_at <= ?2 THEN NULL ELSE (
                    SELECT max(p.version) FROM entity_versions p
                    WHERE p.account_id = e.account_id AND p.kind = e.kind AND p.id = e.id AND p.version < e.version
                        AND p.updated_at <= ?2 AND (
                            SELECT w.updated_at FROM entity_versions w
                            WHERE w.account_id = p.account_id AND w.kind = p.kind AND w.id = p.id
                                AND w.version > p.version
                            ORDER BY w.version LIMIT 1) > ?2) END,
                    e.version, e.change_id, e.deleted, e.name, length(v.body), e.parent_id, e.updated_at, e.device
                FROM \(Self.currentVersions) WHERE e.account_id = ?1 AND (e.kind, e.id) > (?3, ?4)
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
            var entries: [VersionRecord] = []
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
                    entries.append(found)
                }
                last = candidate.ref
            }
            let records = try entries.map { entry in
                var record = entry
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
            // Accounts with a replaced version: one that a later row names.
            try connection.query(
                "SELECT DISTINCT account_id FROM entity_versions WHERE replaces IS NOT NULL ORDER BY account_id"
            ) { row in
                AccountID(row.int64(0))
            }
        }
    }

    public func trimHistory(account: AccountID, replacedBefore: Date, budget: HistoryBudget, versionsMax: Int)
        async throws -> HistoryTrimReport
    {
        let id = account.rawValue
        let cutoff = Self.milliseconds(replacedBefore)
        // Versions replaced before the period, found through their successors
        // by the (account, updated_at) index of rows that name a predecessor.
        var report = try await write { connection in
            let expired = try connection.query(
                """
                SELECT \(Self.trimmableColumns) FROM \(Self.replacedVersions)
                WHERE w.account_id = ? AND w.replaces IS NOT NULL AND w.updated_at < ? ORDER BY w.updated_at LIMIT ?
                """, id, cutoff, versionsMax, map: Self.trimmable)
            return try Self.remove(expired, account: id, connection)
        }
        guard report.versions < versionsMax else { return report }
        // Weighed on a read connection: the writer, and every push, never waits on the sums.
        let (live, held) = try await read { connection in
            // Held: every version but the current ones.
            let current = try connection.queryOne(
                """
                SELECT ifnull(sum(CASE WHEN e.deleted = 0 THEN length(e.name) + ifnull(length(v.body), 0) END), 0),
                    ifnull(sum(length(e.name) + ifnull(length(v.body), 0)), 0)
                FROM \(Self.currentVersions) WHERE e.account_id = ?
                """, id, map: { (live: $0.int64(0), all: $0.int64(1)) })
            let total = try connection.queryOne(
                "SELECT ifnull(sum(length(name) + ifnull(length(body), 0)), 0) FROM entity_versions WHERE account_id = ?",
                id, map: { $0.int64(0) })
            return (current?.live ?? 0, (total ?? 0) - (current?.all ?? 0))
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
                SELECT \(Self.trimmableColumns) FROM \(Self.replacedVersions)
                WHERE w.account_id = ?1 AND w.replaces IS NOT NULL AND NOT (
                    p.deleted = 0
                    AND EXISTS (SELECT 1 FROM entities e
                        WHERE e.account_id = p.account_id AND e.kind = p.kind AND e.id = p.id AND e.deleted = 1)
                    AND NOT EXISTS (SELECT 1 FROM entity_versions x
                        WHERE x.account_id = p.account_id AND x.kind = p.kind AND x.id = p.id
                            AND x.version > p.version AND x.deleted = 0))
                ORDER BY w.updated_at, p.version LIMIT ?2
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

    /// A history row trimming may remove, and the row of its successor.
    typealias Trimmable = (rowid: Int64, size: Int64, replacedAt: Int64, successor: Int64)

    /// Each replaced version `p` with its successor `w`, the row naming it.
    private static let replacedVersions = """
        entity_versions w JOIN entity_versions p
            ON p.account_id = w.account_id AND p.kind = w.kind AND p.id = w.id AND p.version = w.replaces
        """
    private static let trimmableColumns = "p.rowid, length(p.name) + ifnull(length(p.body), 0), w.updated_at, w.rowid"

    private static func trimmable(_ row: Row) -> Trimmable {
        (rowid: row.int64(0), size: row.int64(1), replacedAt: row.int64(2), successor: row.int64(3))
    }

    /// Deletes `rows` and moves the account's `history_since` past them. Their
    /// successors then name no predecessor, so the age index keeps only rows
    /// whose predecessor is still there.
    private static func remove(_ rows: [Trimmable], account: Int64, _ connection: Connection) throws
        -> HistoryTrimReport
    {
        var report = HistoryTrimReport(done: false)
        for row in rows {
            try connection.run("DELETE FROM entity_versions WHERE rowid = ?", row.rowid)
            try connection.run("UPDATE entity_versions SET replaces = NULL WHERE rowid = ?", row.successor)
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

    private static func body(_ connection: Connection, account: AccountID, _ record: VersionRecord) throws -> Data {
        let key: [any SQLBindable] = [
            account.rawValue, record.ref.kind.rawValue, UUIDText.format(record.ref.id), record.version,
        ]
        return try connection.queryOne(
            "SELECT body FROM entity_versions WHERE account_id = ? AND kind = ? AND id = ? AND version = ?",
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
