/// The trash's table and the SQL that reads it.
///
/// A deleted note's last text stays where it already is: in its tombstone
/// row in `notes`, which keeps its body. The `trash` table only says which
/// tombstones are in the trash, since when, from where and under which
/// path; a trigger takes a note out when it is revived by any path (a save
/// at its old path, a pulled edit, a restore) or its row goes, so the trash
/// never shows a live note. Tombstones in the trash are kept when they would
/// otherwise be dropped (a note that never reached a server, at the next
/// mount session); pruning and `empty` drop them or clear their bodies.
///
/// Every entry here is one this machine saw deleted. A second source (notes
/// a server's history says were deleted, which this machine never held)
/// would add rows of its own origin and keep their text beside them, since
/// they have no tombstone; `TrashEntry` and the store's trash API are
/// keyed by the entry, not the tombstone, for that.
enum TrashTable {
    /// Version 10: the trash. Tombstones already in the database go in with
    /// an unknown origin, at the path their folders give (pruning drops
    /// those older than the trash keeps), oldest first: entries are added in
    /// the order they are deleted, so the oldest come first by seq (pruning
    /// reads them so, and no index on the time is kept up on every delete).
    static let version10 = """
        CREATE TABLE trash(
            seq INTEGER PRIMARY KEY,
            note_id TEXT NOT NULL UNIQUE,
            path TEXT NOT NULL,
            deleted_ns INTEGER NOT NULL,
            origin TEXT NOT NULL
        );
        CREATE INDEX trash_path ON trash(path);
        CREATE TRIGGER trash_revived AFTER UPDATE OF deleted ON notes WHEN new.deleted = 0 BEGIN
            DELETE FROM trash WHERE note_id = new.id;
        END;
        CREATE TRIGGER trash_note_gone AFTER DELETE ON notes BEGIN
            DELETE FROM trash WHERE note_id = old.id;
        END;
        INSERT OR IGNORE INTO trash(note_id, path, deleted_ns, origin)
        WITH RECURSIVE chain(note_id, folder_id, path, depth) AS (
            SELECT id, folder_id, \(shownSQL("title")), 0 FROM notes WHERE deleted = 1
            UNION ALL
            SELECT c.note_id, f.parent_id, \(shownSQL("f.name")) || '/' || c.path, c.depth + 1
            FROM chain c JOIN folders f ON f.id = c.folder_id WHERE c.depth < 256
        )
        SELECT c.note_id, c.path, n.updated_ns, 'unknown' FROM chain c JOIN notes n ON n.id = c.note_id
        WHERE c.folder_id IS NULL OR c.depth = 256 OR NOT EXISTS (SELECT 1 FROM folders f WHERE f.id = c.folder_id)
        ORDER BY n.updated_ns, n.seq;
        """

    /// A title or folder name roughly as the mount shows it (only for the
    /// upgrade's paths: `/` and NUL substituted, empty as `Untitled`).
    private static func shownSQL(_ column: String) -> String {
        "CASE WHEN \(column) IN ('', '.', '..') THEN 'Untitled' "
            + "ELSE replace(replace(\(column), '/', '\u{2215}'), char(0), '\u{2400}') END"
    }

    /// The columns a `TrashEntry` is read from (with `visibleSQL`).
    static let columnsSQL = "SELECT t.seq, t.note_id, t.path, n.body_size, t.deleted_ns, t.origin"

    /// The entries the trash shows: notes still deleted, deleted after the
    /// cutoff (bound as the first argument), whose deletion is not held by
    /// the mass-delete guard (a held deletion is not in the trash until it
    /// goes through: `notesfs sync --restore-held` is its way back).
    static let visibleSQL = """
        FROM trash t JOIN notes n ON n.id = t.note_id
        WHERE n.deleted = 1 AND t.deleted_ns >= ?
          AND NOT (EXISTS (SELECT 1 FROM delete_guard g WHERE g.id = 1 AND g.held_since_ns IS NOT NULL
                           AND n.updated_ns > ifnull(g.confirmed_ns, -9223372036854775808))
                   AND EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = n.id
                               AND o.op = 'delete' AND o.state = 'pending'))
        """
}
