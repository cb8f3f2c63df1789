import Foundation
import NotesModel
import SQLiteKit

/// The full-text index (`notes_fts`, FTS5, over titles and bodies), the
/// index of titles alone (`notes_title_fts`, so the notes whose title
/// matches are found without reading every body match's positions), and
/// their bookkeeping.
///
/// The index is contentless (`content=''`): it keeps only the tokens, so
/// taking a note out must name the exact text it was indexed with. That text
/// is the title and the body (and the title in `notes_title_fts`), except that a body that looks binary (a PNG
/// or a PDF copied into the mount: `BodyText.looksBinary`) is indexed as
/// empty and its note listed in `fts_binary`, so its bytes never turn up as
/// words; every removal reads `fts_binary` to know
/// which. A note is in the index exactly when it is live and not listed in
/// `fts_pending`: the triggers take a changed note out once (with the text
/// it was indexed with) and list it there, and `flush` indexes the listed
/// notes again, so a note written in many small pieces is indexed once.
///
/// Tokens are stemmed (`porter` over `unicode61 remove_diacritics 2`), so
/// `pancake` finds "Pancakes" and `crepe` finds "Crêpes".
enum SearchIndex {
    /// A SQL expression for the body text a `notes` row is indexed with:
    /// its text, or empty when `fts_binary` lists it. The arguments are SQL
    /// expressions for the row's columns (`old.seq`, or `n.seq` in a query).
    /// With `size` (a SQL expression for the row's `body_size`) the text
    /// stops there; without, it is the form the schema's triggers store.
    static func indexedBodySQL(seq: String, chunkBytes: String, body: String, size: String? = nil) -> String {
        let text =
            if let size {
                NoteChunks.textSQL(seq: seq, chunkBytes: chunkBytes, body: body, size: size)
            } else {
                NoteChunks.textSQL(seq: seq, chunkBytes: chunkBytes, body: body)
            }
        return "CASE WHEN EXISTS (SELECT 1 FROM fts_binary WHERE seq = \(seq)) THEN '' ELSE \(text) END"
    }

    /// SQL that takes a `notes` row out of the index, if it is in it, with
    /// the text it was indexed with.
    static func unindexSQL(seq: String, title: String, chunkBytes: String, body: String, deleted: String) -> String {
        """
        INSERT INTO notes_fts(notes_fts, rowid, title, body)
                SELECT 'delete', \(seq), \(title), \(indexedBodySQL(seq: seq, chunkBytes: chunkBytes, body: body))
                WHERE \(deleted) = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = \(seq));
            INSERT INTO notes_title_fts(notes_title_fts, rowid, title)
                SELECT 'delete', \(seq), \(title)
                WHERE \(deleted) = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = \(seq));
            DELETE FROM fts_binary WHERE seq = \(seq);
        """
    }

    /// `unindexSQL` for the `old` row of a trigger.
    static let unindexOldSQL = unindexSQL(
        seq: "old.seq", title: "old.title", chunkBytes: "old.chunk_bytes", body: "old.body", deleted: "old.deleted")

    /// The index as schema version 9 makes it, with the triggers that keep
    /// it; every live note is listed for indexing at the next flush.
    static let version9 = """
        DROP TRIGGER IF EXISTS notes_fts_update;
        DROP TRIGGER IF EXISTS notes_unchunk;
        DROP TRIGGER IF EXISTS notes_fts_delete;
        DROP TABLE notes_fts;
        CREATE VIRTUAL TABLE notes_fts USING fts5(
            title, body, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE notes_title_fts USING fts5(
            title, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE fts_binary(seq INTEGER PRIMARY KEY);
        DELETE FROM fts_pending;
        INSERT INTO fts_pending(seq) SELECT seq FROM notes WHERE deleted = 0;

        CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, body, deleted ON notes
        WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.deleted IS NOT new.deleted
        BEGIN
            \(unindexOldSQL)
            INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
        END;
        CREATE TRIGGER notes_unchunk AFTER UPDATE OF body ON notes
        WHEN old.chunk_bytes > 0 AND new.chunk_bytes > 0
        BEGIN
            \(unindexOldSQL)
            INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
            DELETE FROM note_chunks WHERE note_seq = new.seq;
            UPDATE notes SET chunk_bytes = 0, body_size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
        END;
        CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
            \(unindexOldSQL)
            DELETE FROM fts_pending WHERE seq = old.seq;
            DELETE FROM note_chunks WHERE note_seq = old.seq;
        END;
        """

    /// Takes a note out of the index while its indexed text is still
    /// readable, and lists it for indexing: the chunk writes that follow
    /// change its text without touching `notes.body`, so no trigger would.
    /// A note already listed is already out of the index and of
    /// `fts_binary` (every path that lists a note takes it out first), so
    /// the kernel's next writes into it cost one look-up here.
    static func markForSearch(_ db: Connection, seq: Int64) throws {
        if try db.queryOne("SELECT 1 FROM fts_pending WHERE seq = ?", seq, map: { _ in true }) == true { return }
        for sql in markForSearchSQL {
            try db.run(sql, seq)
        }
    }

    /// `markForSearch`'s statements, built once.
    private static let markForSearchSQL = [
        """
        INSERT INTO notes_fts(notes_fts, rowid, title, body)
        SELECT 'delete', n.seq, n.title, \(indexedBodySQL(seq: "n.seq", chunkBytes: "n.chunk_bytes", body: "n.body", size: "n.body_size"))
        FROM notes n WHERE n.seq = ? AND n.deleted = 0
        """,
        """
        INSERT INTO notes_title_fts(notes_title_fts, rowid, title)
        SELECT 'delete', n.seq, n.title FROM notes n WHERE n.seq = ? AND n.deleted = 0
        """,
        "DELETE FROM fts_binary WHERE seq = ?",
        "INSERT INTO fts_pending(seq) VALUES (?)",
    ]

    /// Indexes every listed note: notes whose body looks binary first go
    /// to `fts_binary` (indexed as empty), then one statement indexes all.
    /// (In text, a NUL byte or invalid UTF-8 separates words.)
    static func flush(_ db: Connection) throws {
        let listed = """
            FROM fts_pending p JOIN notes n ON n.seq = p.seq WHERE n.deleted = 0
            """
        var binary: [Int64] = []
        try db.forEachRow("SELECT n.seq, \(NoteChunks.textSQL(of: "n")) \(listed)", arguments: []) { row in
            if row.withBytes(1, { BodyText.looksBinary($0) }) { binary.append(row.int64(0)) }
            return true
        }
        for seq in binary { try db.run("INSERT OR IGNORE INTO fts_binary(seq) VALUES (?)", seq) }
        try db.run(
            """
            INSERT INTO notes_fts(rowid, title, body)
            SELECT n.seq, n.title, \(indexedBodySQL(seq: "n.seq", chunkBytes: "n.chunk_bytes", body: "n.body", size: "n.body_size")) \(listed)
            """)
        try db.run("INSERT INTO notes_title_fts(rowid, title) SELECT n.seq, n.title \(listed)")
        try db.run("DELETE FROM fts_pending")
    }

    /// An FTS5 expression for a parsed query: each part a quoted string (a
    /// quote inside doubled), a prefix part followed by `*`, all required.
    /// User text never reaches FTS5 outside quotes, so it cannot be a syntax error.
    static func expression(for query: SearchQuery) -> String {
        query.parts.map { part in
            "\"" + part.text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" + (part.isPrefix ? "*" : "")
        }.joined(separator: " ")
    }
}
