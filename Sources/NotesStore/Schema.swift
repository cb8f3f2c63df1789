import SQLiteKit

/// The client database's schema, versioned with `PRAGMA user_version` and
/// migrated forward on open. A newer unknown version is refused, never "fixed".
enum Schema {
    /// The version this build writes.
    static let currentVersion = 12

    /// Steps from version n-1 to n, in order; index 0 builds version 1 from an empty file.
    static let migrations: [String] = [
        version1, version2, version3, version4, version5, version6, version7, version8, version9, version10,
        NotesStore.version11, version12,
    ]

    static func migrate(_ db: Connection) throws {
        let found = try db.userVersion
        guard found <= currentVersion else {
            throw StoreError.newerSchema(found: found, supported: currentVersion)
        }
        guard found < currentVersion else { return }
        // `transaction` takes the write lock (BEGIN IMMEDIATE); another process
        // (a mount and an import on a fresh profile) may have migrated while
        // this one waited for it, so the version is read again inside.
        try db.transaction {
            let found = try db.userVersion
            guard found < currentVersion else { return }
            for version in (found + 1)...currentVersion {
                try db.execute(migrations[version - 1])
            }
            try db.setUserVersion(currentVersion)
        }
    }

    /// Version 12: a chunked note may keep spare pieces of zeros past its
    /// end (see `NoteChunks.sparePieces`). No table changes; the version
    /// keeps older builds, which would try to insert a piece that exists,
    /// from writing into such a store.
    private static let version12 = "SELECT 1;"

    /// Version 10: the trash (see `TrashTable`).
    private static let version10 = TrashTable.version10

    /// Version 9: search finds what people type. The index is rebuilt with
    /// stemming (`porter` over `unicode61 remove_diacritics 2`: `pancake`
    /// finds "Pancakes"), keeps no copy of the text (`content=''`), and
    /// indexes a body that looks binary as empty, listing its note in
    /// `fts_binary`; titles get an index of their own (`notes_title_fts`), so
    /// notes whose title matches come first at little cost (see
    /// `SearchIndex`). Every live note is listed in `fts_pending`, so the
    /// next search (or import) indexes it.
    private static let version9 = SearchIndex.version9

    /// Version 8: the store is bound to an account, not a token.
    /// `account_id` is `account:<key>`, the opaque key the server names the
    /// token's account by, or NULL until a server named one;
    /// `account_token_id` is the token that last confirmed the binding. A
    /// binding from before (`token:<id>`) becomes that token with no key yet:
    /// the first answer the same token gets fills in the key.
    private static let version8 = """
        ALTER TABLE sync_state ADD COLUMN account_token_id TEXT;
        UPDATE sync_state SET account_token_id = substr(account_id, 7), account_id = NULL
        WHERE account_id LIKE 'token:%';
        """

    /// Version 7: local-only files' bytes move out of the database into
    /// files in a directory beside it (`LocalFileDirectory`), written at the
    /// offset asked for. `file` names an entry's backing file (NULL: its
    /// bytes are still in `data`: a new empty file, a symbolic link's target,
    /// or a row from before this version, moved out at the next open or its
    /// next write); `size` is what `stat` shows, kept beside it.
    private static let version7 = """
        ALTER TABLE local_entries ADD COLUMN file TEXT;
        ALTER TABLE local_entries ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
        UPDATE local_entries SET size = length(CAST(data AS BLOB));
        """

    /// Version 6: status-change and access times, kept on this machine only
    /// (nothing here is synced, and writing it never queues a change). An
    /// entry without a row shows its mtime as ctime and atime. `changed_ns`
    /// is the ctime recorded while the mtime was `changed_at_modified_ns`:
    /// once the mtime moves on (a write), the ctime is the later of the two,
    /// so it never goes back. `accessed_ns` NULL follows the mtime.
    /// `modified_ns` is the root's mtime (the root has no row of its own).
    /// A row goes with its entity, so a reused local seq starts clean.
    private static let version6 = """
        CREATE TABLE entry_times(
            entry_kind TEXT NOT NULL,
            entry_id TEXT NOT NULL,
            changed_ns INTEGER,
            changed_at_modified_ns INTEGER,
            accessed_ns INTEGER,
            modified_ns INTEGER,
            PRIMARY KEY (entry_kind, entry_id)
        ) WITHOUT ROWID;
        CREATE TRIGGER entry_times_local_delete AFTER DELETE ON local_entries BEGIN
            DELETE FROM entry_times WHERE entry_kind = 'local' AND entry_id = CAST(old.seq AS TEXT);
        END;
        CREATE TRIGGER entry_times_folder_delete AFTER DELETE ON folders BEGIN
            DELETE FROM entry_times WHERE entry_kind = 'folder' AND entry_id = old.id;
        END;
        CREATE TRIGGER entry_times_note_delete AFTER DELETE ON notes BEGIN
            DELETE FROM entry_times WHERE entry_kind = 'note' AND entry_id = old.id;
        END;
        """

    /// Version 5: large bodies stored in chunks, so a write into a large note
    /// costs the size of the write, not of the note (see `NoteChunks`); and
    /// `over_cap_size`, nonzero while a note that a write tried to take past
    /// the size cap is held back from sync (NotesStore+SizeCap.swift).
    /// `chunk_bytes` is 0 for a body kept whole in `body`; otherwise `body` is
    /// empty and `note_chunks` holds it in pieces of `chunk_bytes` (the last
    /// padded with zeros past `body_size`, or shorter in stores written before
    /// the padding). Any writer that sets `body` stores it whole again
    /// (`notes_unchunk`), so SQL that knows nothing of chunks stays right; the
    /// search triggers read a chunked body through its chunks.
    private static let version5 = """
        ALTER TABLE notes ADD COLUMN chunk_bytes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE notes ADD COLUMN over_cap_size INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE note_chunks(
            note_seq INTEGER NOT NULL,
            idx INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (note_seq, idx)
        );

        DROP TRIGGER notes_size_update;
        CREATE TRIGGER notes_size_update AFTER UPDATE OF body, body_size ON notes
        WHEN new.chunk_bytes = 0 AND new.body_size IS NOT length(CAST(new.body AS BLOB))
        BEGIN
            UPDATE notes SET body_size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
        END;

        DROP TRIGGER notes_fts_update;
        CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, body, deleted ON notes
        WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.deleted IS NOT new.deleted
        BEGIN
            INSERT INTO notes_fts(notes_fts, rowid, title, body)
                SELECT 'delete', old.seq, old.title, \(NoteChunks.textSQL(seq: "old.seq", chunkBytes: "old.chunk_bytes", body: "old.body"))
                WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
            INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
        END;
        CREATE TRIGGER notes_unchunk AFTER UPDATE OF body ON notes
        WHEN old.chunk_bytes > 0 AND new.chunk_bytes > 0
        BEGIN
            INSERT INTO notes_fts(notes_fts, rowid, title, body)
                SELECT 'delete', old.seq, old.title, \(NoteChunks.textSQL(seq: "old.seq", chunkBytes: "old.chunk_bytes", body: "old.body"))
                WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
            INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
            DELETE FROM note_chunks WHERE note_seq = new.seq;
            UPDATE notes SET chunk_bytes = 0, body_size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
        END;
        DROP TRIGGER notes_fts_delete;
        CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
            INSERT INTO notes_fts(notes_fts, rowid, title, body)
                SELECT 'delete', old.seq, old.title, \(NoteChunks.textSQL(seq: "old.seq", chunkBytes: "old.chunk_bytes", body: "old.body"))
                WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
            DELETE FROM fts_pending WHERE seq = old.seq;
            DELETE FROM note_chunks WHERE note_seq = old.seq;
        END;
        """

    /// Version 4: the local history listed and pruned without reading bodies,
    /// and directories' subdirectory counts (their link counts) from an index.
    /// A history entry's path and size sit in a covering index beside its
    /// time and reason (a listing of 10,000 entries never touches a body's
    /// overflow pages); `history_total` is the running total the size cap is
    /// held to, kept by triggers for every writer; `names_directories` counts
    /// a directory's subdirectories without visiting its notes.
    private static let version4 = """
        ALTER TABLE history ADD COLUMN path TEXT NOT NULL DEFAULT '';
        ALTER TABLE history ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
        UPDATE history SET path = title, size = length(CAST(body AS BLOB));
        CREATE INDEX history_listing ON history(seq, saved_ns, size, reason, note_id, path);

        CREATE TABLE history_total(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            bytes INTEGER NOT NULL,
            entries INTEGER NOT NULL
        );
        INSERT INTO history_total(id, bytes, entries) SELECT 1, COALESCE(sum(size), 0), count(*) FROM history;
        CREATE TRIGGER history_total_insert AFTER INSERT ON history BEGIN
            UPDATE history_total SET bytes = bytes + new.size, entries = entries + 1 WHERE id = 1;
        END;
        CREATE TRIGGER history_total_delete AFTER DELETE ON history BEGIN
            UPDATE history_total SET bytes = bytes - old.size, entries = entries - 1 WHERE id = 1;
        END;
        CREATE TRIGGER history_total_update AFTER UPDATE OF size ON history BEGIN
            UPDATE history_total SET bytes = bytes + new.size - old.size WHERE id = 1;
        END;
        -- SQL that does not know the size column (tests, old tools) still counts right.
        CREATE TRIGGER history_size_insert AFTER INSERT ON history
        WHEN new.size IS NOT length(CAST(new.body AS BLOB))
        BEGIN
            UPDATE history SET size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
        END;
        CREATE TRIGGER history_size_update AFTER UPDATE OF body ON history
        WHEN new.size IS NOT length(CAST(new.body AS BLOB))
        BEGIN
            UPDATE history SET size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
        END;

        CREATE INDEX names_directories ON names(parent_key) WHERE entry_kind IN ('folder', 'local');
        """

    /// Version 3: the mass-delete guard's memory, so its rolling window, its
    /// hold and the pulled deletions it keeps aside survive restarts.
    /// (`sync_state.live_notes_at_clean_sync` and `allow_mass_delete` are no
    /// longer used.)
    private static let version3 = """
        -- Deletions let through (pushed when frozen, pulled when applied), each
        -- counted as the live notes it removed; pruned to the window.
        CREATE TABLE deletion_log(
            seq INTEGER PRIMARY KEY,
            at_ns INTEGER NOT NULL,
            direction TEXT NOT NULL CHECK (direction IN ('push', 'pull')),
            entity_kind TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            notes INTEGER NOT NULL
        );
        CREATE INDEX deletion_log_at ON deletion_log(at_ns);

        -- Pulled tombstones the guard holds: not applied until the user
        -- confirms, dropped (and the entity pushed back) when they restore.
        CREATE TABLE held_pulls(
            seq INTEGER PRIMARY KEY,
            entity_kind TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            held_ns INTEGER NOT NULL,
            UNIQUE (entity_kind, entity_id)
        );

        -- One row: since when deletions are held (NULL = not held), the last
        -- confirmation or restore (the window starts no earlier), and the
        -- counts that tripped the hold.
        CREATE TABLE delete_guard(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            held_since_ns INTEGER,
            confirmed_ns INTEGER,
            tripped_deletions INTEGER NOT NULL DEFAULT 0,
            tripped_live INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO delete_guard(id) VALUES (1);
        """

    /// Version 2: each note's size kept beside it, and an index holding what a
    /// listing shows (size, mtime, mode) by note id, so `readdirplus`, lookup
    /// and getattr never read a body: 10,000 bodies do not fit SQLite's page
    /// cache, and a listing of 100 notes read 100 rows of 1–3 KB each.
    /// Triggers keep `body_size` right for every writer, also for SQL that does
    /// not know the column (tests, the simulation).
    private static let version2 = """
        ALTER TABLE notes ADD COLUMN body_size INTEGER NOT NULL DEFAULT 0;
        UPDATE notes SET body_size = length(CAST(body AS BLOB));
        CREATE TRIGGER notes_size_insert AFTER INSERT ON notes
        WHEN new.body_size IS NOT length(CAST(new.body AS BLOB))
        BEGIN
            UPDATE notes SET body_size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
        END;
        CREATE TRIGGER notes_size_update AFTER UPDATE OF body, body_size ON notes
        WHEN new.body_size IS NOT length(CAST(new.body AS BLOB))
        BEGIN
            UPDATE notes SET body_size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
        END;
        CREATE INDEX notes_listing ON notes(id, updated_ns, body_size, mode);
        """

    private static let version1 = """
        CREATE TABLE sync_state(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            server_url TEXT,
            account_id TEXT,
            device_id TEXT NOT NULL,
            device_name TEXT NOT NULL,
            cursor TEXT,
            last_success_ns INTEGER,
            last_attempt_ns INTEGER,
            last_failed INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            live_notes_at_clean_sync INTEGER,
            allow_mass_delete INTEGER NOT NULL DEFAULT 0,
            session INTEGER NOT NULL DEFAULT 0,
            durable_syncs INTEGER NOT NULL DEFAULT 0
        );

        -- Folders and notes carry their synced base (what the server last
        -- confirmed) for three-way merges; dirty = local_rev <> synced_rev.
        CREATE TABLE folders(
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            parent_id TEXT,
            name TEXT NOT NULL,
            created_ns INTEGER NOT NULL,
            updated_ns INTEGER NOT NULL,
            mode INTEGER NOT NULL DEFAULT 493,
            deleted INTEGER NOT NULL DEFAULT 0,
            server_version INTEGER,
            base_exists INTEGER NOT NULL DEFAULT 0,
            base_name TEXT,
            base_parent_id TEXT,
            local_rev INTEGER NOT NULL DEFAULT 1,
            synced_rev INTEGER NOT NULL DEFAULT 0
        );

        CREATE TABLE notes(
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            folder_id TEXT,
            title TEXT NOT NULL,
            body BLOB NOT NULL,
            created_ns INTEGER NOT NULL,
            updated_ns INTEGER NOT NULL,
            mode INTEGER NOT NULL DEFAULT 420,
            deleted INTEGER NOT NULL DEFAULT 0,
            server_version INTEGER,
            base_exists INTEGER NOT NULL DEFAULT 0,
            base_title TEXT,
            base_body BLOB,
            base_folder_id TEXT,
            local_rev INTEGER NOT NULL DEFAULT 1,
            synced_rev INTEGER NOT NULL DEFAULT 0,
            conflict_of TEXT
        );
        CREATE INDEX notes_folder ON notes(folder_id) WHERE deleted = 0;

        -- Entries kept on this machine only: editor scratch files, hidden
        -- directories such as .git, and the text of refused changes.
        CREATE TABLE local_entries(
            seq INTEGER PRIMARY KEY,
            type INTEGER NOT NULL,
            data BLOB NOT NULL DEFAULT x'',
            mode INTEGER NOT NULL,
            created_ns INTEGER NOT NULL,
            updated_ns INTEGER NOT NULL,
            origin TEXT
        );

        -- Every name shown in a directory. The row id is the readdir cookie;
        -- a name stays put (sticky) until its own entry's title or folder changes.
        CREATE TABLE names(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            parent_key TEXT NOT NULL,
            name TEXT NOT NULL,
            entry_kind TEXT NOT NULL,
            entry_id TEXT NOT NULL,
            source TEXT NOT NULL,
            UNIQUE (parent_key, name),
            UNIQUE (entry_kind, entry_id)
        );

        -- Inode numbers come from a counter that is never reused.
        CREATE TABLE inodes(
            ino INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_kind TEXT NOT NULL,
            entry_id TEXT NOT NULL,
            generation INTEGER NOT NULL DEFAULT 1
        );
        CREATE UNIQUE INDEX inodes_entry ON inodes(entry_kind, entry_id);
        INSERT INTO inodes(ino, entry_kind, entry_id) VALUES (1, 'root', '');

        -- One row per pending change. A pending row is coalesced and read at
        -- send time; an in-flight row is frozen: payload and base are copied in
        -- and resent unchanged, with the same change id, until answered.
        CREATE TABLE outbox(
            seq INTEGER PRIMARY KEY,
            change_id TEXT NOT NULL UNIQUE,
            entity_kind TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            op TEXT NOT NULL CHECK (op IN ('put', 'delete')),
            state TEXT NOT NULL CHECK (state IN ('pending', 'in_flight')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            created_ns INTEGER NOT NULL,
            frozen_rev INTEGER,
            base_version INTEGER,
            payload_title TEXT,
            payload_body BLOB,
            payload_folder_id TEXT,
            payload_name TEXT,
            payload_parent_id TEXT
        );
        CREATE UNIQUE INDEX outbox_one_pending ON outbox(entity_kind, entity_id) WHERE state = 'pending';
        CREATE UNIQUE INDEX outbox_one_in_flight ON outbox(entity_kind, entity_id) WHERE state = 'in_flight';

        -- Bodies replaced by a truncation or a large shrink, kept for restore.
        CREATE TABLE history(
            seq INTEGER PRIMARY KEY,
            note_id TEXT NOT NULL,
            title TEXT NOT NULL,
            body BLOB NOT NULL,
            saved_ns INTEGER NOT NULL,
            reason TEXT NOT NULL
        );
        CREATE INDEX history_note ON history(note_id, seq);

        -- Changes the server refused; their text lives in a local-only copy.
        CREATE TABLE refusals(
            seq INTEGER PRIMARY KEY,
            entity_kind TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            title TEXT NOT NULL,
            reason TEXT NOT NULL,
            copy_seq INTEGER,
            at_ns INTEGER NOT NULL
        );

        -- Paths of notes tombstoned during this mount session: creating a file
        -- there revives the note instead of making a new one.
        CREATE TABLE revivable(
            parent_key TEXT NOT NULL,
            name TEXT NOT NULL,
            note_id TEXT NOT NULL,
            session INTEGER NOT NULL,
            PRIMARY KEY (parent_key, name)
        );

        -- Full-text search over live notes. The index is external-content (the
        -- text lives once, in notes) and brought up to date lazily: triggers take
        -- a changed note out of the index once and list it in fts_pending, and
        -- flushSearchIndex() re-adds pending notes, so a note written in many
        -- small pieces is indexed once, not once per write.
        CREATE VIRTUAL TABLE notes_fts USING fts5(
            title, body, content = 'notes', content_rowid = 'seq',
            tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE TABLE fts_pending(seq INTEGER PRIMARY KEY);

        CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
            INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
        END;
        CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, body, deleted ON notes
        WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.deleted IS NOT new.deleted
        BEGIN
            INSERT INTO notes_fts(notes_fts, rowid, title, body)
                SELECT 'delete', old.seq, old.title, old.body
                WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
            INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
        END;
        CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
            INSERT INTO notes_fts(notes_fts, rowid, title, body)
                SELECT 'delete', old.seq, old.title, old.body
                WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
            DELETE FROM fts_pending WHERE seq = old.seq;
        END;
        """
}
