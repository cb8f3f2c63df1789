import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// The reads a client's sync makes: the feed, the head and the index (one
/// statement, one snapshot each) and fetch, on the pool.
extension PostgresServerStore {
    public func changes(account: AccountID, after: Int64, rowsMax: Int, bytesMax: Int) async throws -> FeedRead {
        try await run { connection in
            // One statement: one snapshot for the counter and the rows. The
            // running size cuts the page before bodies past it are read.
            let rows = try connection.execute(
                """
                SELECT a.counter, a.purged_through, p.kind, p.id, p.version, p.change_id, p.deleted, p.name,
                    CASE WHEN p.n = 1 OR p.running <= $4 THEN p.body END, p.parent_id, p.updated_at, p.n, p.running
                FROM accounts a
                LEFT JOIN LATERAL (
                    SELECT l.*, row_number() OVER w AS n,
                        sum(octet_length(l.name) + coalesce(octet_length(l.body), 0) + 200) OVER w AS running
                    FROM (
                        SELECT * FROM entities e WHERE e.account_id = a.account_id AND e.version > $2
                        ORDER BY e.version LIMIT $3
                    ) l
                    WINDOW w AS (ORDER BY l.version)
                ) p ON true
                WHERE a.account_id = $1
                ORDER BY p.version
                """, account.rawValue, after, Int64(rowsMax + 1), Int64(bytesMax))
            guard rows.rowCount > 0 else {
                return FeedRead(entities: [], hasMore: false, head: FeedHead(counter: 0, purgedThrough: 0))
            }
            let head = FeedHead(counter: try rows.int64(0, 0), purgedThrough: try rows.int64(0, 1))
            var entities: [StoredEntity] = []
            var found = 0
            for row in 0..<rows.rowCount where !rows.isNull(row, 2) {
                found += 1
                let n = try rows.int64(row, 11)
                let running = try rows.int64(row, 12)
                guard n <= Int64(rowsMax), n == 1 || running <= Int64(bytesMax), entities.count == n - 1 else { continue }
                entities.append(try Self.entity(rows, row, from: 2))
            }
            return FeedRead(entities: entities, hasMore: found > entities.count, head: head)
        }
    }

    public func head(account: AccountID) async throws -> FeedHead {
        try await run { connection in
            let rows = try connection.execute(
                "SELECT counter, purged_through FROM accounts WHERE account_id = $1", account.rawValue)
            guard rows.rowCount == 1 else { return FeedHead(counter: 0, purgedThrough: 0) }
            return FeedHead(counter: try rows.int64(0, 0), purgedThrough: try rows.int64(0, 1))
        }
    }

    public func index(account: AccountID, after: EntityRef?, rowsMax: Int) async throws -> IndexRead {
        try await run { connection in
            let start = after.map { ($0.kind.rawValue, UUIDText.format($0.id)) }
                ?? ("", "00000000-0000-0000-0000-000000000000")
            let rows = try connection.execute(
                """
                SELECT a.counter, a.purged_through, e.kind, e.id, e.version
                FROM accounts a
                LEFT JOIN LATERAL (
                    SELECT kind, id, version FROM entities
                    WHERE account_id = a.account_id AND NOT deleted AND (kind, id) > ($2::text, $3::uuid)
                    ORDER BY kind, id LIMIT $4
                ) e ON true
                WHERE a.account_id = $1
                ORDER BY e.kind, e.id
                """, account.rawValue, start.0, start.1, Int64(rowsMax + 1))
            guard rows.rowCount > 0 else {
                return IndexRead(entries: [], hasMore: false, head: FeedHead(counter: 0, purgedThrough: 0))
            }
            let head = FeedHead(counter: try rows.int64(0, 0), purgedThrough: try rows.int64(0, 1))
            var entries: [IndexEntry] = []
            for row in 0..<rows.rowCount where !rows.isNull(row, 2) {
                entries.append(
                    IndexEntry(
                        kind: try Self.kind(try rows.string(row, 2)), id: try rows.uuid(row, 3),
                        version: try rows.int64(row, 4)))
            }
            let hasMore = entries.count > rowsMax
            if hasMore { entries.removeLast() }
            return IndexRead(entries: entries, hasMore: hasMore, head: head)
        }
    }

    public func entities(account: AccountID, refs: [EntityRef], bytesMax: Int) async throws -> FetchRead {
        guard !refs.isEmpty else { return FetchRead(found: [], notFound: [], omitted: []) }
        return try await run { [self] connection in
            try retrying(connection, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let (kinds, ids) = Self.arrays(refs)
                let sizes = try connection.execute(
                    """
                    SELECT e.kind, e.id, octet_length(e.name) + coalesce(octet_length(e.body), 0) + 200
                    FROM unnest($2::text[], $3::uuid[]) AS r(kind, id)
                    JOIN entities e ON e.account_id = $1 AND e.kind = r.kind AND e.id = r.id
                    """, account.rawValue, kinds, ids)
                var size: [EntityRef: Int] = [:]
                for row in 0..<sizes.rowCount {
                    let ref = EntityRef(kind: try Self.kind(try sizes.string(row, 0)), id: try sizes.uuid(row, 1))
                    size[ref] = try sizes.int(row, 2)
                }
                var read = FetchRead(found: [], notFound: [], omitted: [])
                var chosen: [EntityRef] = []
                var bytes = 0
                for ref in refs {
                    guard let bytesOfRef = size[ref] else {
                        read.notFound.append(ref)
                        continue
                    }
                    if !chosen.isEmpty && bytes + bytesOfRef > bytesMax {
                        read.omitted.append(ref)
                        continue
                    }
                    bytes += bytesOfRef
                    chosen.append(ref)
                }
                let (chosenKinds, chosenIds) = Self.arrays(chosen)
                let rows = try connection.execute(
                    """
                    SELECT \(Self.entityColumns) FROM unnest($2::text[], $3::uuid[]) AS r(kind, id)
                    JOIN entities e ON e.account_id = $1 AND e.kind = r.kind AND e.id = r.id
                    """, account.rawValue, chosenKinds, chosenIds)
                var byRef: [EntityRef: StoredEntity] = [:]
                for row in 0..<rows.rowCount {
                    let entity = try Self.entity(rows, row, from: 0)
                    byRef[entity.ref] = entity
                }
                read.found = chosen.compactMap { byRef[$0] }
                return read
            }
        }
    }
}
