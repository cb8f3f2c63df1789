import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// The history of the PostgreSQL store: `entity_versions` holds every
/// replaced version (copied there by the push's own write statement); the
/// current version of each entity stays in `entities`.
extension PostgresServerStore {
    /// The columns of a version without its body, in `versionRecord` order.
    static let versionColumns =
        "version, change_id, deleted, name, coalesce(octet_length(body), 0), parent_id, updated_at, device"

    public func versions(account: AccountID, ref: EntityRef, before: Int64?, rowsMax: Int) async throws
        -> VersionsRead
    {
        try await run { connection in
            // One statement: one snapshot of the current row and the history.
            let rows = try connection.execute(
                """
                SELECT a.history_since, x.* FROM accounts a
                LEFT JOIN LATERAL (
                    (SELECT \(Self.versionColumns) FROM entities
                    WHERE account_id = $1 AND kind = $2 AND id = $3::uuid AND version < $4
                    UNION ALL
                    SELECT \(Self.versionColumns) FROM entity_versions
                    WHERE account_id = $1 AND kind = $2 AND id = $3::uuid AND version < $4)
                    ORDER BY version DESC LIMIT $5
                ) x ON true
                WHERE a.account_id = $1
                ORDER BY x.version DESC
                """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id), before ?? Int64.max,
                Int64(rowsMax + 1))
            guard rows.rowCount > 0 else { return VersionsRead(versions: [], hasMore: false, keptSince: nil) }
            var versions: [VersionRecord] = []
            for row in 0..<rows.rowCount where !rows.isNull(row, 1) {
                versions.append(try Self.versionRecord(rows, row, from: 1, ref: ref, body: nil))
            }
            let hasMore = versions.count > rowsMax
            if hasMore { versions.removeLast() }
            return VersionsRead(versions: versions, hasMore: hasMore, keptSince: try Self.keptSince(rows, 0, 0))
        }
    }

    public func version(account: AccountID, ref: EntityRef, version: Int64) async throws -> VersionRecord? {
        try await run { connection in
            let rows = try connection.execute(
                """
                SELECT \(Self.versionColumns), body FROM entities
                WHERE account_id = $1 AND kind = $2 AND id = $3::uuid AND version = $4
                UNION ALL
                SELECT \(Self.versionColumns), body FROM entity_versions
                WHERE account_id = $1 AND kind = $2 AND id = $3::uuid AND version = $4
                """, account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id), version)
            guard rows.rowCount > 0 else { return nil }
            return try Self.versionRecord(rows, 0, from: 0, ref: ref, body: 8)
        }
    }

    public func tree(
        account: AccountID, at: Date, after: EntityRef?, rowsMax: Int, bytesMax: Int, bodies: Bool
    ) async throws -> TreeRead {
        try await run { [self] connection in
            try retrying(connection, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let since = try connection.execute(
                    "SELECT history_since FROM accounts WHERE account_id = $1", account.rawValue)
                let keptSince = since.rowCount == 0 ? nil : try Self.keptSince(since, 0, 0)
                let start = after.map { ($0.kind.rawValue, UUIDText.format($0.id)) }
                    ?? ("", "00000000-0000-0000-0000-000000000000")
                // Which version each entity had at `at`: its current row when
                // that was made by then, else the replaced version in force then.
                let rows = try connection.execute(
                    """
                    SELECT e.kind, e.id, c.past, c.version, c.change_id, c.deleted, c.name, c.size, c.parent_id,
                        c.updated_at, c.device
                    FROM entities e
                    LEFT JOIN LATERAL (
                        SELECT false AS past, e.version, e.change_id, e.deleted, e.name,
                            coalesce(octet_length(e.body), 0) AS size, e.parent_id, e.updated_at, e.device
                        WHERE e.updated_at <= $2
                        UNION ALL
                        (SELECT true, v.version, v.change_id, v.deleted, v.name, coalesce(octet_length(v.body), 0),
                            v.parent_id, v.updated_at, v.device
                        FROM entity_versions v
                        WHERE e.updated_at > $2 AND v.account_id = e.account_id AND v.kind = e.kind AND v.id = e.id
                            AND v.updated_at <= $2 AND v.replaced_at > $2
                        ORDER BY v.version DESC LIMIT 1)
                    ) c ON true
                    WHERE e.account_id = $1 AND (e.kind, e.id) > ($3::text, $4::uuid)
                    ORDER BY e.kind, e.id LIMIT $5
                    """, account.rawValue, Self.milliseconds(at), start.0, start.1, Int64(rowsMax + 1))
                var entries: [(record: VersionRecord, past: Bool)] = []
                var last: EntityRef?
                var bytes = 0
                var cut = false
                for row in 0..<min(rows.rowCount, rowsMax) {
                    let ref = EntityRef(kind: try Self.kind(try rows.string(row, 0)), id: try rows.uuid(row, 1))
                    if !rows.isNull(row, 2) {
                        let record = try Self.versionRecord(rows, row, from: 3, ref: ref, body: nil)
                        if !record.deleted {
                            let estimate = record.sizeEstimate(withBody: bodies)
                            if !entries.isEmpty && bytes + estimate > bytesMax {
                                cut = true
                                break
                            }
                            bytes += estimate
                            entries.append((record, try rows.bool(row, 2)))
                        }
                    }
                    last = ref
                }
                let records = bodies
                    ? try Self.withBodies(entries, account: account, connection) : entries.map(\.record)
                return TreeRead(
                    entries: records, last: last, hasMore: cut || rows.rowCount > rowsMax, keptSince: keptSince)
            }
        }
    }

    public func historyAccounts() async throws -> [AccountID] {
        try await run { connection in
            let rows = try connection.execute(
                """
                SELECT a.account_id FROM accounts a
                WHERE EXISTS (SELECT 1 FROM entity_versions v WHERE v.account_id = a.account_id)
                ORDER BY a.account_id
                """)
            return try (0..<rows.rowCount).map { AccountID(try rows.int64($0, 0)) }
        }
    }

    public func trimHistory(account: AccountID, replacedBefore: Date, budget: HistoryBudget, versionsMax: Int)
        async throws -> HistoryTrimReport
    {
        let id = account.rawValue
        let cutoff = Self.milliseconds(replacedBefore)
        // Versions replaced before the period, found by the (account, replaced_at) index.
        var report = try await run { [self] connection in
            try retrying(connection) {
                try Self.remove(
                    """
                    SELECT kind, id, version FROM entity_versions
                    WHERE account_id = $1 AND replaced_at < $2 ORDER BY replaced_at LIMIT $3
                    """, [.int(id), .int(cutoff), .int(Int64(versionsMax))], account: id, connection)
            }
        }
        guard report.versions < versionsMax else { return report }
        // Weighed outside any transaction: no push waits on the sums.
        let (live, held) = try await run { connection in
            let sizes = try connection.execute(
                """
                SELECT
                    (SELECT coalesce(sum(octet_length(name) + coalesce(octet_length(body), 0)), 0)::bigint
                        FROM entities WHERE account_id = $1 AND NOT deleted),
                    (SELECT coalesce(sum(octet_length(name) + coalesce(octet_length(body), 0)), 0)::bigint
                        FROM entity_versions WHERE account_id = $1)
                """, id)
            return (try sizes.int64(0, 0), try sizes.int64(0, 1))
        }
        let excess = held - budget.bytesMax(liveBytes: live)
        guard excess > 0 else {
            report.done = true
            return report
        }
        let room = versionsMax - report.versions
        // The oldest first, never the last text of a note deleted now, up to
        // the excess: the running sum stops the list where it is covered.
        let step = try await run { [self] connection in
            try retrying(connection) {
                var removed = try Self.remove(
                    """
                    SELECT kind, id, version FROM (
                        SELECT v.kind, v.id, v.version, v.replaced_at,
                            sum(octet_length(v.name) + coalesce(octet_length(v.body), 0))
                                OVER (ORDER BY v.replaced_at, v.version) AS running,
                            octet_length(v.name) + coalesce(octet_length(v.body), 0) AS size
                        FROM entity_versions v
                        WHERE v.account_id = $1 AND NOT (
                            NOT v.deleted
                            AND EXISTS (SELECT 1 FROM entities e
                                WHERE e.account_id = v.account_id AND e.kind = v.kind AND e.id = v.id AND e.deleted)
                            AND NOT EXISTS (SELECT 1 FROM entity_versions w
                                WHERE w.account_id = v.account_id AND w.kind = v.kind AND w.id = v.id
                                    AND w.version > v.version AND NOT w.deleted))
                        ORDER BY v.replaced_at, v.version LIMIT $2
                    ) oldest
                    WHERE running - size < $3
                    """, [.int(id), .int(Int64(room)), .int(excess)], account: id, connection)
                // Covered, or every candidate went and none is left.
                removed.done = removed.bytes >= excess || removed.versions < room
                return removed
            }
        }
        report.versions += step.versions
        report.bytes += step.bytes
        report.done = step.done
        return report
    }

    /// Deletes the history rows of `account` that `select` names (kind, id,
    /// version), taking the account row first (the push lock order), and
    /// moves the account's `history_since` past them. Runs in a transaction.
    private static func remove(
        _ select: String, _ arguments: [PostgresValue], account: Int64, _ connection: PostgresConnection
    ) throws -> HistoryTrimReport {
        try connection.execute("SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", account)
        let gone = try connection.execute(
            """
            WITH gone AS (
                DELETE FROM entity_versions v USING (\(select)) d
                WHERE v.account_id = $1 AND v.kind = d.kind AND v.id = d.id AND v.version = d.version
                RETURNING octet_length(v.name) + coalesce(octet_length(v.body), 0) AS size, v.replaced_at),
            marked AS (
                UPDATE accounts SET history_since = greatest(history_since, (SELECT max(replaced_at) FROM gone))
                WHERE account_id = $1 AND EXISTS (SELECT 1 FROM gone))
            SELECT count(*), coalesce(sum(size), 0)::bigint FROM gone
            """, arguments: arguments)
        return HistoryTrimReport(versions: try gone.int(0, 0), bytes: try gone.int64(0, 1), done: false)
    }

    // MARK: Rows

    /// The bodies of the chosen tree entries (notes only), read in one statement.
    private static func withBodies(
        _ entries: [(record: VersionRecord, past: Bool)], account: AccountID, _ connection: PostgresConnection
    ) throws -> [VersionRecord] {
        let notes = entries.filter { $0.record.ref.kind == .note }
        guard !notes.isEmpty else { return entries.map(\.record) }
        let rows = try connection.execute(
            """
            SELECT x.kind, x.id, b.body
            FROM unnest($2::text[], $3::uuid[], $4::int8[], $5::bool[]) AS x(kind, id, version, past)
            CROSS JOIN LATERAL (
                SELECT e.body FROM entities e
                WHERE NOT x.past AND e.account_id = $1 AND e.kind = x.kind AND e.id = x.id
                UNION ALL
                SELECT v.body FROM entity_versions v
                WHERE x.past AND v.account_id = $1 AND v.kind = x.kind AND v.id = x.id AND v.version = x.version
            ) b
            """, account.rawValue, PostgresValue.array(.text(notes.map(\.record.ref.kind.rawValue))),
            PostgresValue.array(.uuid(notes.map(\.record.ref.id))),
            PostgresValue.array(.int64(notes.map(\.record.version))), PostgresValue.array(.bool(notes.map(\.past))))
        var bodies: [EntityRef: Data] = [:]
        for row in 0..<rows.rowCount {
            let ref = EntityRef(kind: try kind(try rows.string(row, 0)), id: try rows.uuid(row, 1))
            bodies[ref] = try rows.data(row, 2)
        }
        return entries.map { entry in
            var record = entry.record
            if let body = bodies[record.ref] { record.body = body }
            return record
        }
    }

    /// `history_since` as a time; nil when the history was always whole.
    static func keptSince(_ rows: PostgresResult, _ row: Int, _ column: Int) throws -> Date? {
        let since = try rows.int64(row, column)
        return since > 0 ? Self.date(milliseconds: since) : nil
    }

    /// A version from `versionColumns` starting at `first` (and the body at `first + body`).
    static func versionRecord(_ rows: PostgresResult, _ row: Int, from first: Int, ref: EntityRef, body: Int?) throws
        -> VersionRecord
    {
        VersionRecord(
            ref: ref, version: try rows.int64(row, first), changeId: ChangeID(try rows.uuid(row, first + 1)),
            deleted: try rows.bool(row, first + 2), name: try rows.string(row, first + 3),
            body: try body.map { try rows.data(row, first + $0) } ?? Data(), size: try rows.int(row, first + 4),
            parentId: try rows.optionalUUID(row, first + 5),
            time: Self.date(milliseconds: try rows.int64(row, first + 6)),
            device: try rows.optionalUUID(row, first + 7).map(DeviceID.init))
    }
}
