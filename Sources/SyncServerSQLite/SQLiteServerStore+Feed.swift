import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer

/// The reads a client's sync makes: the feed, the head, the index and fetch,
/// each in one read transaction (one snapshot) on a reader connection.
extension SQLiteServerStore {
    public func changes(account: AccountID, after: Int64, rowsMax: Int, bytesMax: Int) async throws -> FeedRead {
        try await read { connection in
            let head = try Self.head(connection, account: account)
            // Sizes first, so a page of large notes is cut before its bodies are read.
            let sizes = try connection.query(
                """
                SELECT e.version, length(e.name) + ifnull(length(v.body), 0) FROM \(Self.currentVersions)
                WHERE e.account_id = ? AND e.version > ? ORDER BY e.version LIMIT ?
                """, account.rawValue, after, rowsMax + 1
            ) { row in (row.int64(0), row.int(1) + 200) }
            var last: Int64 = after
            var bytes = 0
            var count = 0
            for (version, size) in sizes.prefix(rowsMax) {
                if count > 0 && bytes + size > bytesMax { break }
                bytes += size
                count += 1
                last = version
            }
            let entities =
                count == 0
                ? []
                : try connection.query(
                    """
                    SELECT \(Self.currentColumns) FROM \(Self.currentVersions)
                    WHERE e.account_id = ? AND e.version > ? AND e.version <= ? ORDER BY e.version
                    """, account.rawValue, after, last, map: Self.entity)
            return FeedRead(entities: entities, hasMore: sizes.count > count, head: head)
        }
    }

    public func head(account: AccountID) async throws -> FeedHead {
        try await read { connection in try Self.head(connection, account: account) }
    }

    public func index(account: AccountID, after: EntityRef?, rowsMax: Int) async throws -> IndexRead {
        try await read { connection in
            let head = try Self.head(connection, account: account)
            let start = after.map { ($0.kind.rawValue, UUIDText.format($0.id)) } ?? ("", "")
            var entries = try connection.query(
                """
                SELECT kind, id, version FROM entities
                WHERE account_id = ? AND (kind, id) > (?, ?) AND deleted = 0 ORDER BY kind, id LIMIT ?
                """, account.rawValue, start.0, start.1, rowsMax + 1
            ) { row in
                IndexEntry(kind: try Self.kind(row.string(0)), id: try Self.uuid(row.string(1)), version: row.int64(2))
            }
            let hasMore = entries.count > rowsMax
            if hasMore { entries.removeLast() }
            return IndexRead(entries: entries, hasMore: hasMore, head: head)
        }
    }

    public func entities(account: AccountID, refs: [EntityRef], bytesMax: Int) async throws -> FetchRead {
        try await read { connection in
            var read = FetchRead(found: [], notFound: [], omitted: [])
            var bytes = 0
            for ref in refs {
                let key: [any SQLBindable] = [account.rawValue, ref.kind.rawValue, UUIDText.format(ref.id)]
                guard
                    let size = try connection.queryOne(
                        """
                        SELECT length(e.name) + ifnull(length(v.body), 0) FROM \(Self.currentVersions)
                        WHERE e.account_id = ? AND e.kind = ? AND e.id = ?
                        """, arguments: key, map: { $0.int(0) + 200 })
                else {
                    read.notFound.append(ref)
                    continue
                }
                if !read.found.isEmpty && bytes + size > bytesMax {
                    read.omitted.append(ref)
                    continue
                }
                bytes += size
                if let entity = try connection.queryOne(
                    """
                    SELECT \(Self.currentColumns) FROM \(Self.currentVersions)
                    WHERE e.account_id = ? AND e.kind = ? AND e.id = ?
                    """,
                    arguments: key, map: Self.entity)
                {
                    read.found.append(entity)
                }
            }
            return read
        }
    }
}
