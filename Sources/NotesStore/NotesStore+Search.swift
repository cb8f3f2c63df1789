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
    public func flushSearchIndex() throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            try SearchIndex.flush(db)
        }
    }

    /// A SQL expression for the whole body of the `notes` row named `alias`
    /// (a large body is kept in chunks): for checks that read the database
    /// directly, such as the simulation's.
    public static func noteBodySQL(of alias: String) -> String { NoteChunks.textSQL(of: alias) }

    /// True when some notes changed since the index was last brought up to date.
    public func searchIndexIsStale() throws(StoreError) -> Bool {
        try read { db in try db.queryOne("SELECT 1 FROM fts_pending LIMIT 1") { _ in true } ?? false }
    }

    /// Notes matching `query` as typed (words, `word*` prefixes, `"quoted
    /// phrases"`; see `SearchQuery`), in `directory` and the folders inside it
    /// when given: notes whose title matches first, then the rest, best first.
    public func search(_ query: String, in directory: DirectoryRef? = nil, limit: Int = 50) throws(StoreError)
        -> [SearchHit]
    {
        try search(SearchQuery(query), in: directory, limit: limit)
    }

    /// Notes matching a parsed query (see `search(_:in:limit:)`).
    public func search(_ query: SearchQuery, in directory: DirectoryRef? = nil, limit: Int = 50) throws(StoreError)
        -> [SearchHit]
    {
        let expression = SearchIndex.expression(for: query)
        guard !expression.isEmpty, limit > 0 else { return [] }
        if try searchIndexIsStale() { try flushSearchIndex() }
        let snippets = SearchSnippet(query: query)
        return try read { db in
            // Notes whose title holds the whole query come first, then the
            // others: two ranked lookups in the index, each reading only the
            // row ids it returns.
            var seqs = try rankedMatches(db, expression: "title : (\(expression))", in: directory, limit: limit)
            if seqs.count < limit {
                var seen = Set(seqs)
                for seq in try rankedMatches(db, expression: expression, in: directory, limit: limit + seqs.count)
                where seqs.count < limit && seen.insert(seq).inserted {
                    seqs.append(seq)
                }
            }
            // Snippets are built here, reading each body once up to its first
            // hit: SQLite's snippet() tokenized every returned body twice and
            // was nine tenths of a search's time (docs/bench.md). A body the
            // index skipped (not UTF-8) is not read at all. The note's shown name comes with
            // it; folder paths are looked up once per search (a few dozen
            // folders, thousands of notes).
            var directoryPaths: [String: String?] = [DirectoryRef.root.key: ""]
            var hits: [SearchHit] = []
            for seq in seqs {
                guard
                    let (idText, title, isText, snippet, directoryKey, name) = try db.queryOne(
                        """
                        SELECT n.id, n.title,
                          CASE WHEN EXISTS (SELECT 1 FROM fts_binary b WHERE b.seq = n.seq) THEN NULL
                          ELSE \(NoteChunks.textSQL(of: "n")) END, nm.parent_key, nm.name
                        FROM notes n LEFT JOIN names nm ON nm.entry_kind = 'note' AND nm.entry_id = n.id
                        WHERE n.seq = ? AND n.deleted = 0
                        """, seq,
                        map: { row -> (String, String, Bool, String, String?, String?) in
                            let (isText, snippet) =
                                row.isNull(2)
                                ? (false, "")
                                : row.withBytes(2) { body in
                                    BodyText.isText(body) ? (true, snippets.excerpt(of: body)) : (false, "")
                                }
                            return (row.string(0), row.string(1), isText, snippet, row.optionalString(3),
                                    row.optionalString(4))
                        }),
                    let uuid = UUIDText.parse(idText)
                else { continue }
                var path = "/" + title
                if let directoryKey, let name, let directory = DirectoryRef(key: directoryKey) {
                    if directoryPaths[directoryKey] == nil {
                        directoryPaths[directoryKey] = try self.path(db, of: directory.entry)
                    }
                    if let directoryPath = directoryPaths[directoryKey] ?? nil { path = directoryPath + "/" + name }
                }
                hits.append(
                    SearchHit(noteID: NoteID(uuid), title: title, path: path, snippet: snippet, bodyIsText: isText))
            }
            return hits
        }
    }

    /// Row ids of up to `limit` notes matching an FTS5 expression, in
    /// `directory` (and below) when given, best first by bm25 with the title
    /// weighted 5:1; a query matching thousands of notes is ordered newest
    /// first instead (scoring them all costs tens of ms).
    private func rankedMatches(_ db: Connection, expression: String, in directory: DirectoryRef?, limit: Int) throws
        -> [Int64]
    {
        let broad =
            try db.queryOne(
                "SELECT 1 FROM notes_fts WHERE notes_fts MATCH ? LIMIT 1 OFFSET ?", expression,
                Self.broadQueryMatches) { _ in true } ?? false
        let order = broad ? "notes_fts.rowid DESC" : "notes_fts.rank"
        guard let directory else {
            return try db.query(
                """
                SELECT notes_fts.rowid FROM notes_fts
                WHERE notes_fts MATCH ? AND notes_fts.rank MATCH 'bm25(5.0, 1.0)' ORDER BY \(order) LIMIT ?
                """, expression, limit
            ) { $0.int64(0) }
        }
        // The directory and every folder shown inside it, by the names the
        // mount shows (a note whose folder is gone is shown in the root).
        return try db.query(
            """
            WITH RECURSIVE under(key) AS (
                SELECT ? UNION
                SELECT 'f:' || nm.entry_id FROM names nm JOIN under u ON nm.parent_key = u.key
                WHERE nm.entry_kind = 'folder'
            )
            SELECT notes_fts.rowid FROM notes_fts
            JOIN notes n ON n.seq = notes_fts.rowid
            JOIN names nm ON nm.entry_kind = 'note' AND nm.entry_id = n.id
            WHERE notes_fts MATCH ? AND notes_fts.rank MATCH 'bm25(5.0, 1.0)'
              AND nm.parent_key IN (SELECT key FROM under)
            ORDER BY \(order) LIMIT ?
            """, directory.key, expression, limit
        ) { $0.int64(0) }
    }

    /// Above this many matches a query is ranked by recency, not relevance.
    static let broadQueryMatches = 1_000

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
