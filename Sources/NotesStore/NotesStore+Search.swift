import Foundation
import NotesModel
import SQLiteKit

/// One search result.
public struct SearchHit: Sendable, Equatable {
    public var noteID: NoteID
    public var title: String
    /// The note's path in the mount, from the root (`/Work/todo.md`).
    public var path: String
    /// Matching text with the hits between `[` and `]`; empty when the body is not text.
    public var snippet: String
    /// False when the body is not text (invalid UTF-8 or NUL bytes: an image,
    /// a PDF): it shows no snippet, and a body that is not UTF-8 at all is
    /// found by its title only.
    public var bodyIsText: Bool = true
}

// Full-text search over titles and bodies (SearchIndex), and paths of entries.
extension NotesStore {
    /// Brings the search index up to date with every committed note.
    func flushSearchIndex() throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            try SearchIndex.flush(db)
        }
    }

    /// A SQL expression for the whole body of the `notes` row named `alias`
    /// (a large body is kept in chunks): for checks that read the database
    /// directly, such as the simulation's.
    public static func noteBodySQL(of alias: String) -> String { NoteChunks.textSQL(of: alias) }

    /// True when some notes changed since the index was last brought up to date.
    func searchIndexIsStale() throws(StoreError) -> Bool {
        try read { db in try db.queryOne("SELECT 1 FROM fts_pending LIMIT 1") { _ in true } ?? false }
    }

    /// Notes matching `query` as typed (words, `word*` prefixes, `"quoted
    /// phrases"`; see `SearchQuery`), in `directory` and the folders inside it
    /// when given: notes whose title matches first, then the rest, best first.
    func search(_ query: String, in directory: DirectoryRef? = nil, limit: Int = 50) throws(StoreError)
        -> [SearchHit]
    {
        try search(SearchQuery(query), in: directory, limit: limit)
    }

    /// Notes matching a parsed query (see `search(_:in:limit:)`).
    func search(_ query: SearchQuery, in directory: DirectoryRef? = nil, limit: Int = 50) throws(StoreError)
        -> [SearchHit]
    {
        let expression = SearchIndex.expression(for: query)
        guard !expression.isEmpty, limit > 0 else { return [] }
        if try searchIndexIsStale() { try flushSearchIndex() }
        let snippets = SearchSnippet(query: query)
        return try read { db in
            // Notes whose title holds the whole query come first, then the
            // others: a lookup in the index of titles (small: a few words a
            // note), then one in the whole index, each reading only the row
            // ids it returns.
            let scope = try directory.map { try Self.notesUnder($0, db) }
            let broadAbove = Self.broadMatches(for: query)
            var seqs = try rankedMatches(
                db, table: "notes_title_fts", rank: "bm25()", expression: expression, in: scope, limit: limit,
                broadAbove: broadAbove)
            if seqs.count < limit {
                var seen = Set(seqs)
                let rest = try rankedMatches(
                    db, table: "notes_fts", rank: "bm25(5.0, 1.0)", expression: expression, in: scope,
                    limit: limit + seqs.count, broadAbove: broadAbove)
                for seq in rest where seqs.count < limit && seen.insert(seq).inserted { seqs.append(seq) }
            }
            return try hits(db, seqs: seqs, snippets: snippets)
        }
    }

    /// The notes shown in `directory` and in every folder inside it, by the
    /// names the mount shows (a note whose folder is gone is in the root),
    /// as a JSON array of their row ids.
    private static func notesUnder(_ directory: DirectoryRef, _ db: Connection) throws -> String {
        // `+nm.entry_kind` keeps SQLite on the parent_key index: the
        // (entry_kind, entry_id) one would visit every note.
        let seqs = try db.query(
            """
            WITH RECURSIVE under(key) AS (
                SELECT ? UNION
                SELECT 'f:' || nm.entry_id FROM under u CROSS JOIN names nm
                WHERE nm.parent_key = u.key AND +nm.entry_kind = 'folder'
            )
            SELECT n.seq FROM under u CROSS JOIN names nm CROSS JOIN notes n
            WHERE nm.parent_key = u.key AND +nm.entry_kind = 'note' AND n.id = nm.entry_id
            """, directory.key
        ) { $0.int64(0) }
        return "[" + seqs.map(String.init).joined(separator: ",") + "]"
    }

    /// Row ids of up to `limit` notes matching an FTS5 expression in `table`,
    /// among the notes of `scope` (a JSON array of row ids) when given, best
    /// first by `rank`; a query matching more than `broadAbove` notes is
    /// ordered newest first instead (scoring them all costs tens of ms).
    private func rankedMatches(
        _ db: Connection, table: String, rank: String, expression: String, in scope: String?, limit: Int,
        broadAbove: Int
    ) throws -> [Int64] {
        let broad =
            try db.queryOne(
                "SELECT 1 FROM \(table) WHERE \(table) MATCH ? LIMIT 1 OFFSET ?", expression, broadAbove
            ) { _ in true } ?? false
        let order = broad ? "f.rowid DESC" : "f.rank"
        guard let scope else {
            return try db.query(
                """
                SELECT f.rowid FROM \(table) f WHERE f.\(table) MATCH ? AND f.rank MATCH '\(rank)'
                ORDER BY \(order) LIMIT ?
                """, expression, limit
            ) { $0.int64(0) }
        }
        // `+f.rowid` keeps the row ids a filter on the index's matches (the
        // scope is looked up once, as a set), not a list of lookups into it.
        return try db.query(
            """
            SELECT f.rowid FROM \(table) f WHERE f.\(table) MATCH ? AND f.rank MATCH '\(rank)'
              AND +f.rowid IN (SELECT value FROM json_each(?))
            ORDER BY \(order) LIMIT ?
            """, expression, scope, limit
        ) { $0.int64(0) }
    }

    /// The results for `seqs`, in that order: one query reads the notes, their
    /// shown names and their bodies. Snippets are built here, reading each
    /// body once up to its first hit: SQLite's snippet() tokenized every
    /// returned body twice and was nine tenths of a search's time
    /// (docs/bench.md). A body the index skipped (binary) is not read at all.
    /// Folder paths are looked up once per search (a few dozen folders,
    /// thousands of notes).
    private func hits(_ db: Connection, seqs: [Int64], snippets: SearchSnippet) throws -> [SearchHit] {
        guard !seqs.isEmpty else { return [] }
        let order = Dictionary(seqs.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let rows = try db.query(
            """
            SELECT n.seq, n.id, n.title,
              CASE WHEN EXISTS (SELECT 1 FROM fts_binary b WHERE b.seq = n.seq) THEN NULL
              ELSE \(NoteChunks.textSQL(of: "n")) END, nm.parent_key, nm.name
            FROM notes n LEFT JOIN names nm ON nm.entry_kind = 'note' AND nm.entry_id = n.id
            WHERE n.seq IN (SELECT value FROM json_each(?)) AND n.deleted = 0
            """, "[" + seqs.map(String.init).joined(separator: ",") + "]"
        ) { row -> (Int, String, String, Bool, String, String?, String?) in
            let (isText, snippet) =
                row.isNull(3)
                ? (false, "")
                : row.withBytes(3) { body in
                    BodyText.isText(body) ? (true, snippets.excerpt(of: body)) : (false, "")
                }
            return (order[row.int64(0)] ?? Int.max, row.string(1), row.string(2), isText, snippet,
                    row.optionalString(4), row.optionalString(5))
        }
        var directoryPaths: [String: String?] = [DirectoryRef.root.key: ""]
        var hits: [(Int, SearchHit)] = []
        for (position, idText, title, isText, snippet, directoryKey, name) in rows {
            guard let uuid = UUIDText.parse(idText) else { continue }
            var path = "/" + title
            if let directoryKey, let name, let directory = DirectoryRef(key: directoryKey) {
                if directoryPaths[directoryKey] == nil {
                    directoryPaths[directoryKey] = try self.path(db, of: directory.entry)
                }
                if let directoryPath = directoryPaths[directoryKey] ?? nil { path = directoryPath + "/" + name }
            }
            hits.append(
                (position, SearchHit(noteID: NoteID(uuid), title: title, path: path, snippet: snippet, bodyIsText: isText)))
        }
        return hits.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Above this many matches a query is ranked by recency, not relevance.
    static let broadQueryMatches = 1_000
    /// The same bound for a query with a quoted phrase: scoring a phrase reads
    /// each match's word positions, about 4 µs a match (430 matches of
    /// `"the with"` took 3 ms to rank against 1.2 ms to find), so a common
    /// phrase would otherwise cost over 5 ms.
    static let broadPhraseQueryMatches = 200

    /// How many matches `query` may have and still be ranked by relevance.
    static func broadMatches(for query: SearchQuery) -> Int {
        query.parts.contains(where: \.isPhrase) ? broadPhraseQueryMatches : broadQueryMatches
    }

    /// The entry's path from the mount root, or nil when it is not shown.
    public func path(of ref: EntryRef) throws(StoreError) -> String? {
        try read { db in try self.path(db, of: ref) }
    }

    func path(_ db: Connection, of ref: EntryRef) throws -> String? {
        var components: [String] = []
        var current = ref
        while current != .root {
            guard let name = try NameRow.find(db, entry: current), components.count < 4_096 else { return nil }
            components.append(name.name)
            current = name.directory.entry
        }
        return "/" + components.reversed().joined(separator: "/")
    }
}
