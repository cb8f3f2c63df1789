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
                SELECT n.seq, n.title, n.body FROM fts_pending p JOIN notes n ON n.seq = p.seq WHERE n.deleted = 0
                """)
            try db.run("DELETE FROM fts_pending")
        }
    }

    /// True when some notes changed since the index was last brought up to date.
    public func searchIndexIsStale() throws(StoreError) -> Bool {
        try read { db in try db.queryOne("SELECT 1 FROM fts_pending LIMIT 1") { _ in true } ?? false }
    }

    /// Notes matching every word of `query`, best first.
    public func search(_ query: String, limit: Int = 50) throws(StoreError) -> [SearchHit] {
        let expression = Self.ftsExpression(for: query)
        guard !expression.isEmpty else { return [] }
        if try searchIndexIsStale() { try flushSearchIndex() }
        return try read { db in
            let rows = try db.query(
                """
                SELECT n.id, n.title, snippet(notes_fts, 1, '[', ']', '…', 12)
                FROM notes_fts JOIN notes n ON n.seq = notes_fts.rowid
                WHERE notes_fts MATCH ? AND n.deleted = 0
                ORDER BY bm25(notes_fts, 5.0, 1.0) LIMIT ?
                """, expression, limit
            ) { ($0.string(0), $0.string(1), $0.string(2)) }
            return try rows.compactMap { idText, title, snippet in
                guard let id = NoteID(idText) else { return nil }
                return SearchHit(noteID: id, title: title, path: try self.path(db, of: .note(id)) ?? "/" + title,
                                 snippet: snippet)
            }
        }
    }

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
