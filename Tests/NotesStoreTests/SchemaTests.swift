import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

@Suite struct SchemaTests {
    /// Turns a current (v11) database back into the v10 layout: no
    /// remembered server history period.
    static func downgradeToVersion10(_ path: String) throws {
        try Connection(path: path).execute(
            "ALTER TABLE sync_state DROP COLUMN server_history_seconds; PRAGMA user_version = 10;")
    }

    @Test func aVersion10DatabaseGetsThePeriodColumnAndKeepsTheTrash30DaysUntilAServerSays() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        do {
            let store = try NotesStore(path: path)
            try store.rememberServerHistory(seconds: 86_400)
        }
        try Self.downgradeToVersion10(path)
        let store = try NotesStore(path: path)
        #expect(try Connection(path: path).userVersion == Schema.currentVersion)
        #expect(store.trashRetentionNanoseconds == 30 * 86_400 * 1_000_000_000)
        try store.rememberServerHistory(seconds: 86_400)
        #expect(store.trashRetentionNanoseconds == 86_400 * 1_000_000_000)
    }

    @Test func anEmptyFileIsMigratedToTheCurrentSchema() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let store = try NotesStore(path: path)
        #expect(try store.integrityCheck() == ["ok"])
        #expect(try Connection(path: path).userVersion == Schema.currentVersion)
    }

    /// Turns a current (v6) database back into the v5 layout: no local
    /// status-change and access times.
    static func downgradeToVersion5(_ path: String) throws {
        try downgradeToVersion6(path)
        try Connection(path: path).execute(
            """
            DROP TRIGGER entry_times_local_delete; DROP TRIGGER entry_times_folder_delete;
            DROP TRIGGER entry_times_note_delete; DROP TABLE entry_times; PRAGMA user_version = 5;
            """)
    }

    /// Turns a current database back into the v4 layout: no chunks, and
    /// the size and search triggers as they were.
    static func downgradeToVersion4(_ path: String) throws {
        try downgradeToVersion5(path)
        let db = try Connection(path: path)
        try db.execute(
            """
            DROP TRIGGER notes_unchunk; DROP TRIGGER notes_size_update; DROP TRIGGER notes_fts_update;
            DROP TRIGGER notes_fts_delete; DROP TABLE note_chunks; ALTER TABLE notes DROP COLUMN chunk_bytes;
            ALTER TABLE notes DROP COLUMN over_cap_size;
            CREATE TRIGGER notes_size_update AFTER UPDATE OF body, body_size ON notes
            WHEN new.body_size IS NOT length(CAST(new.body AS BLOB))
            BEGIN
                UPDATE notes SET body_size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
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
            PRAGMA user_version = 4;
            """)
    }

    @Test func aVersion4DatabaseIsMigratedAndItsLargeNotesGoToChunksOnTheirNextWrite() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        var configuration = StoreConfiguration()
        configuration.chunkedBodyThresholdBytes = 64
        configuration.bodyChunkBytes = 16
        let text = Data(utf8: String(repeating: "an old long note\n", count: 10))
        let id = try NotesStore(path: path).createNote(in: .root, title: "a.md", body: text)
        try Self.downgradeToVersion4(path)

        let store = try NotesStore(path: path, configuration: configuration)
        #expect(try Connection(path: path).userVersion == Schema.currentVersion)
        #expect(try store.integrityCheck() == ["ok"])
        #expect(try store.search("old").map(\.noteID) == [id])
        try store.write(.note(id), offset: Int64(text.count), bytes: Data(utf8: "appended kangaroo\n"))
        #expect(try store.contents(of: .note(id)) == text + Data(utf8: "appended kangaroo\n"))
        #expect(try store.search("kangaroo").map(\.noteID) == [id])
        #expect(try store.search("old").map(\.noteID) == [id])
    }

    /// Turns a current (v10) database back into the v9 layout: no trash.
    static func downgradeToVersion9(_ path: String) throws {
        try downgradeToVersion10(path)
        try Connection(path: path).execute(
            "DROP TRIGGER trash_revived; DROP TRIGGER trash_note_gone; DROP TABLE trash; PRAGMA user_version = 9;")
    }

    /// Turns a current database back into the v8 layout: the search
    /// index unstemmed and external-content (`content='notes'`), every body
    /// indexed as stored (binary ones too), no title index or `fts_binary`,
    /// and the v5 search triggers; the index is left fully built, as v8 left it.
    static func downgradeToVersion8(_ path: String) throws {
        try downgradeToVersion9(path)
        let old = NotesStore.noteBodySQL(of: "old")
        let db = try Connection(path: path)
        try db.execute(
            """
            DROP TRIGGER notes_fts_update; DROP TRIGGER notes_unchunk; DROP TRIGGER notes_fts_delete;
            DROP TABLE notes_fts; DROP TABLE notes_title_fts; DROP TABLE fts_binary;
            CREATE VIRTUAL TABLE notes_fts USING fts5(
                title, body, content = 'notes', content_rowid = 'seq',
                tokenize = 'unicode61 remove_diacritics 2'
            );
            CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, body, deleted ON notes
            WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.deleted IS NOT new.deleted
            BEGIN
                INSERT INTO notes_fts(notes_fts, rowid, title, body)
                    SELECT 'delete', old.seq, old.title, \(old)
                    WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
                INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
            END;
            CREATE TRIGGER notes_unchunk AFTER UPDATE OF body ON notes
            WHEN old.chunk_bytes > 0 AND new.chunk_bytes > 0
            BEGIN
                INSERT INTO notes_fts(notes_fts, rowid, title, body)
                    SELECT 'delete', old.seq, old.title, \(old)
                    WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
                INSERT OR IGNORE INTO fts_pending(seq) VALUES (new.seq);
                DELETE FROM note_chunks WHERE note_seq = new.seq;
                UPDATE notes SET chunk_bytes = 0, body_size = length(CAST(new.body AS BLOB)) WHERE seq = new.seq;
            END;
            CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
                INSERT INTO notes_fts(notes_fts, rowid, title, body)
                    SELECT 'delete', old.seq, old.title, \(old)
                    WHERE old.deleted = 0 AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE seq = old.seq);
                DELETE FROM fts_pending WHERE seq = old.seq;
                DELETE FROM note_chunks WHERE note_seq = old.seq;
            END;
            DELETE FROM fts_pending;
            INSERT INTO notes_fts(rowid, title, body)
                SELECT n.seq, n.title, \(NotesStore.noteBodySQL(of: "n")) FROM notes n WHERE n.deleted = 0;
            PRAGMA user_version = 8;
            """)
    }

    @Test func aVersion8DatabaseIsMigratedToAStemmedIndexThatSkipsBinaryBodies() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        var configuration = StoreConfiguration()
        configuration.chunkedBodyThresholdBytes = 64
        configuration.bodyChunkBytes = 16
        let pancakes: NoteID, crepes: NoteID, png: NoteID, large: NoteID
        do {
            let store = try NotesStore(path: path, configuration: configuration)
            pancakes = try store.createNote(in: .root, title: "Pancakes.md", body: Data(utf8: "flour and milk\n"))
            crepes = try store.createNote(in: .root, title: "dessert.md", body: Data(utf8: "Crêpes Suzette\n"))
            png = try store.createNote(in: .root, title: "logo.png", body: SearchTests.png + Data(utf8: " pancake"))
            let file = try store.createFile(in: .root, name: "long.txt")
            try store.write(file.ref, offset: 0, bytes: Data(utf8: String(repeating: "kangaroos jumping\n", count: 8)))
            guard case .note(let id) = file.ref else { throw StoreError.notFound("long.txt as a note") }
            large = id
            try store.flushSearchIndex()
        }
        try Self.downgradeToVersion8(path)
        let old = try Connection(path: path)
        #expect(try old.query("SELECT rowid FROM notes_fts WHERE notes_fts MATCH 'pancake'") { $0.int64(0) }.count == 1)
        #expect(try old.query("SELECT rowid FROM notes_fts WHERE notes_fts MATCH 'ihdr'") { $0.int64(0) }.count == 1)

        let store = try NotesStore(path: path, configuration: configuration)
        #expect(try Connection(path: path).userVersion == Schema.currentVersion)
        #expect(try store.integrityCheck() == ["ok"])
        #expect(try store.searchIndexIsStale())
        // The PNG's title matches; the bytes of its body are not indexed.
        #expect(Set(try store.search("pancake").map(\.noteID)) == [pancakes])
        #expect(try store.search("ihdr").isEmpty)
        #expect(try store.search("logo").map(\.noteID) == [png])
        #expect(try store.search("crepe").map(\.noteID) == [crepes])
        #expect(try store.search("kangaroo jump").map(\.noteID) == [large])
        // Edits after the migration keep the index consistent with the chunks.
        try store.write(.note(large), offset: 0, bytes: Data(utf8: "wallabies"))
        #expect(try store.search("kangaroo").map(\.noteID) == [large])
        #expect(try store.search("wallaby").map(\.noteID) == [large])
        try store.replaceBody(of: large, with: Data(utf8: "emus only\n"))
        #expect(try store.search("kangaroo").isEmpty)
        #expect(try store.search("emu").map(\.noteID) == [large])
        try SearchIndexTests.expectIndexMatchesContent(store, path)
    }

    /// Turns a v8 database back into the v7 layout: the binding
    /// in `account_id` alone (`token:<id>` then), no `account_token_id`.
    static func downgradeToVersion7(_ path: String) throws {
        try downgradeToVersion8(path)
        try Connection(path: path).execute(
            """
            UPDATE sync_state SET account_id = 'token:' || account_token_id WHERE account_token_id IS NOT NULL;
            ALTER TABLE sync_state DROP COLUMN account_token_id; PRAGMA user_version = 7;
            """)
    }

    /// Turns a v7 database back into the v6 layout: local-only
    /// files' bytes in `local_entries.data` (call it before any file has a
    /// backing file), no `file` or `size` column.
    static func downgradeToVersion6(_ path: String) throws {
        try downgradeToVersion7(path)
        try Connection(path: path).execute(
            "ALTER TABLE local_entries DROP COLUMN file; ALTER TABLE local_entries DROP COLUMN size; PRAGMA user_version = 6")
    }

    /// Turns a current database back into the v3 layout: no history
    /// paths, sizes, listing index or running total, no subdirectory index.
    static func downgradeToVersion3(_ path: String) throws {
        try downgradeToVersion4(path)
        let db = try Connection(path: path)
        try db.execute(
            """
            DROP TRIGGER history_total_insert; DROP TRIGGER history_total_delete; DROP TRIGGER history_total_update;
            DROP TRIGGER history_size_insert; DROP TRIGGER history_size_update; DROP TABLE history_total;
            DROP INDEX history_listing; DROP INDEX names_directories;
            ALTER TABLE history DROP COLUMN path; ALTER TABLE history DROP COLUMN size; PRAGMA user_version = 3;
            """)
    }

    /// Turns a current database back into the v1 layout: no size column,
    /// no listing index, no size triggers, no mass-delete guard tables.
    static func downgradeToVersion1(_ path: String) throws {
        try downgradeToVersion3(path)
        let db = try Connection(path: path)
        try db.execute(
            """
            DROP TABLE deletion_log; DROP TABLE held_pulls; DROP TABLE delete_guard;
            DROP INDEX notes_listing; DROP TRIGGER notes_size_insert; DROP TRIGGER notes_size_update;
            ALTER TABLE notes DROP COLUMN body_size; PRAGMA user_version = 1;
            """)
    }

    @Test func aVersion1DatabaseIsMigratedAndListsEverySizeWithoutReadingBodies() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        let id = try NotesStore(path: path).createNote(in: .root, title: "a.md", body: Data(utf8: "hello"))
        try Self.downgradeToVersion1(path)
        // Written the v1 way: a body bound as text counts its UTF-8 bytes.
        try Connection(path: path).run("UPDATE notes SET body = ? WHERE id = ?", "héllo wörld", id.description)

        let store = try NotesStore(path: path)
        #expect(try Connection(path: path).userVersion == Schema.currentVersion)
        #expect(try store.integrityCheck() == ["ok"])
        #expect(try store.list(directory: .root).map(\.size) == [13])
        let plan = try Connection(path: path).query(
            "EXPLAIN QUERY PLAN SELECT updated_ns, body_size, mode FROM notes INDEXED BY notes_listing WHERE id = ?",
            id.description
        ) { $0.string(3) }
        #expect(plan.contains { $0.contains("COVERING INDEX notes_listing") }, "\(plan)")
    }

    @Test func aVersion3HistoryIsMigratedWithSizesPathsAndItsRunningTotal() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        do {
            let store = try NotesStore(path: path)
            let id = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "0123456789"))
            try store.truncate(.note(id), to: 0)
            try store.replaceBody(of: id, with: Data(utf8: "abcdefghijklmnopqrst"))
            try store.truncate(.note(id), to: 0)
        }
        try Self.downgradeToVersion3(path)
        // As made by an older version: freed pages are never given back.
        try Connection(path: path).execute("PRAGMA auto_vacuum=NONE; VACUUM")
        #expect(try Connection(path: path).queryOne("PRAGMA auto_vacuum") { $0.int(0) } == 0)

        let store = try NotesStore(path: path)
        #expect(try Connection(path: path).userVersion == Schema.currentVersion)
        #expect(try store.integrityCheck() == ["ok"])
        #expect(try store.historyTotal() == HistoryTotal(bytes: 30, entries: 2))
        let entries = try store.historyPage(afterSeq: 0, limit: 10)
        #expect(entries.map(\.size) == [10, 20])
        #expect(entries.map(\.path) == ["a.md", "a.md"])
        #expect(try Connection(path: path).queryOne("PRAGMA auto_vacuum") { $0.int(0) } == 2)
    }

    @Test func everyWriterKeepsTheListedSizeRight() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        let store = try NotesStore(path: path)
        let file = try store.createFile(in: .root, name: "n.md")
        try store.write(file.ref, offset: 0, bytes: Data(utf8: "0123456789"))
        #expect(try store.entry(for: file.ref)?.size == 10)
        try store.truncate(file.ref, to: 4)
        #expect(try store.entry(for: file.ref)?.size == 4)
        // SQL that does not know the column (the simulation, old tools) too.
        guard case .note(let id) = file.ref else { Issue.record("not a note: \(file.ref)"); return }
        try Connection(path: path).run("UPDATE notes SET body = ? WHERE id = ?", Data(count: 7), id.description)
        #expect(try store.entry(for: file.ref)?.size == 7)
        try Connection(path: path).run("UPDATE notes SET body_size = 1 WHERE id = ?", id.description)
        #expect(try store.entry(for: file.ref)?.size == 7)
    }

    @Test func aDatabaseFromANewerVersionIsRefusedAndLeftUntouched() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        try Connection(path: path).setUserVersion(99)
        #expect(throws: StoreError.newerSchema(found: 99, supported: Schema.currentVersion)) { _ = try NotesStore(path: path) }
        #expect(try Connection(path: path).userVersion == 99)
    }
}
