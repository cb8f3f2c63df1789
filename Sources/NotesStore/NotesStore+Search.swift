import Foundation
import NotesModel
import SQLiteKit

/// One search result.
public struct SearchHit: Sendable, Equatable {
    public var noteID: NoteID
    public var title: String
    /// The note's path in the mount, from the root (`/Work/todo.md`).
    public var path: String
    /// Matching text with the hits between `[` and `]`.
    public var snippet: String
}

// Full-text search over titles and bodies, and paths of entries.
extension NotesStore {
    /// Brings the search index up to date with every committed note.
    public func flushSearchIndex() throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            try db.run(
                """
                INSERT INTO notes_fts(rowid, title, body)
                SELECT n.seq, n.title, \(NoteChunks.textSQL(of: "n")) FROM fts_pending p JOIN notes n ON n.seq = p.seq WHERE n.deleted = 0
                """)
            try db.run("DELETE FROM fts_pending")
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

    /// Notes matching every word of `query`, best first.
    public func search(_ query: String, limit: Int = 50) throws(StoreError) -> [SearchHit] {
        let expression = Self.ftsExpression(for: query)
        guard !expression.isEmpty else { return [] }
        if try searchIndexIsStale() { try flushSearchIndex() }
        let snippets = SearchSnippet(query: query)
        return try read { db in
            // rank MATCH makes SQLite rank inside FTS5, so only the rows
            // returned are read. A query matching thousands of notes is ranked
            // newest first instead: scoring them all costs tens of ms.
            // Snippets are built here, reading each body once up to its first
            // hit: SQLite's snippet() tokenized every returned body twice and
            // was nine tenths of a search's time (docs/bench.md).
            let broad =
                try db.queryOne(
                    "SELECT 1 FROM notes_fts WHERE notes_fts MATCH ? LIMIT 1 OFFSET ?", expression,
                    Self.broadQueryMatches) { _ in true } ?? false
            let order = broad ? "notes_fts.rowid DESC" : "notes_fts.rank"
            // The note's shown name comes with it; folder paths are looked up
            // once per search (a few dozen folders, thousands of notes).
            let rows = try db.query(
                """
                SELECT n.id, n.title, \(NoteChunks.textSQL(of: "n")), nm.parent_key, nm.name
                FROM notes_fts JOIN notes n ON n.seq = notes_fts.rowid
                LEFT JOIN names nm ON nm.entry_kind = 'note' AND nm.entry_id = n.id
                WHERE notes_fts MATCH ? AND notes_fts.rank MATCH 'bm25(5.0, 1.0)' AND n.deleted = 0
                ORDER BY \(order) LIMIT ?
                """, expression, limit
            ) { row in
                (row.string(0), row.string(1), row.withBytes(2) { snippets.excerpt(of: $0) }, row.optionalString(3),
                 row.optionalString(4))
            }
            var directoryPaths: [String: String?] = [DirectoryRef.root.key: ""]
            return try rows.compactMap { idText, title, snippet, directoryKey, name in
                guard let uuid = UUIDText.parse(idText) else { return nil }
                var path = "/" + title
                if let directoryKey, let name, let directory = DirectoryRef(key: directoryKey) {
                    if directoryPaths[directoryKey] == nil {
                        directoryPaths[directoryKey] = try self.path(db, of: directory.entry)
                    }
                    if let directoryPath = directoryPaths[directoryKey] ?? nil { path = directoryPath + "/" + name }
                }
                return SearchHit(noteID: NoteID(uuid), title: title, path: path, snippet: snippet)
            }
        }
    }

    /// Above this many matches a query is ranked by recency, not relevance.
    static let broadQueryMatches = 1_000

    /// Quotes each word so user text is never parsed as FTS5 syntax.
    static func ftsExpression(for query: String) -> String {
        query.split(whereSeparator: { $0.isWhitespace }).map { word in
            "\"" + word.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }.joined(separator: " ")
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
