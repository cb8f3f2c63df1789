import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer
import SyncServerSQLite
import TestSupport
import Testing

/// Schema 6 of the SQLite store writes each version's body once, into
/// `entity_versions`, with `entities` pointing at the current version. A
/// populated store of version 5 (bodies in `entities`, replaced versions
/// copied into `entity_versions` with their `replaced_at`) migrates to it
/// and answers every read as before.
@Suite struct SQLiteBodiesOnceTests {
    static let day: Double = 86_400

    /// What every read of the account answers: the feed, the index, each
    /// note's versions and texts, and the tree at each moment in `moments`.
    struct Answers: Equatable {
        var feed: [EntityVersion]
        var index: IndexPage
        var versions: [VersionsPage]
        var texts: [HistoricEntity?]
        var trees: [[HistoricEntity]]
    }

    static func answers(_ h: Harness, token: String, refs: [EntityRef], moments: [Date]) async throws -> Answers {
        var versions: [VersionsPage] = []
        var texts: [HistoricEntity?] = []
        for ref in refs {
            let page = try await h.versions(token: token, of: ref)
            versions.append(page)
            for summary in page.versions { texts.append(try await h.version(token: token, of: ref, summary.version)) }
        }
        var trees: [[HistoricEntity]] = []
        for moment in moments { trees.append(try await h.wholeTree(token: token, at: moment)) }
        return Answers(
            feed: try await h.drain(token: token).rows, index: try await h.index(token: token), versions: versions,
            texts: texts, trees: trees)
    }

    @Test func aPopulatedVersion5StoreMigratesAndAnswersAsBefore() async throws {
        let h = try Harness(.sqlite)
        let token = try await h.account()
        let note = NoteID(), gone = NoteID(), other = NoteID(), folder = FolderID()
        var moments: [Date] = []
        _ = try await h.push([Make.folder(folder), Make.note(note, body: "one\n", folder: folder)], token: token)  // 1, 2
        moments.append(h.now)
        h.clock.advance(seconds: 60)
        _ = try await h.push(Make.note(note, body: "two\n", folder: folder, base: 2), token: token)  // 3
        _ = try await h.push(Make.note(gone, body: "gone\n"), token: token)  // 4
        moments.append(h.now)
        h.clock.advance(seconds: 60)
        _ = try await h.push(.delete(.note(gone), baseVersion: 4), token: token)  // 5
        _ = try await h.push(Make.note(note, title: "renamed.md", body: "three\n", base: 3), token: token)  // 6
        moments.append(h.now)
        h.clock.advance(seconds: 60)
        _ = try await h.push(Make.note(other, body: String(repeating: "x", count: 5_000)), token: token)  // 7
        moments.append(h.now.addingTimeInterval(30))
        let refs: [EntityRef] = [.note(note), .note(gone), .note(other), .folder(folder)]
        let before = try await Self.answers(h, token: token, refs: refs, moments: moments)
        #expect(before.versions[0].versions.map(\.version) == [6, 3, 2])
        await h.close(keepData: true)
        let path = SQLiteServerStore.databasePath(inDirectory: h.directory.path)
        try Self.downgradeToVersion5(path)
        #expect(try Connection(path: path).queryOne("SELECT count(*) FROM entity_versions", map: { $0.int(0) }) == 3)

        let reopened = try Harness(.sqlite, directory: h.directory, clock: h.clock)
        #expect(try await Self.answers(reopened, token: token, refs: refs, moments: moments) == before)
        let connection = try Connection(path: path)
        #expect(try connection.userVersion == 6)
        #expect(
            try connection.queryOne("SELECT count(*) FROM entity_versions", map: { $0.int(0) }) == 7,
            "every version, the current ones too")
        #expect(
            try connection.query("SELECT version, replaces FROM entity_versions ORDER BY version") {
                "\($0.int64(0)):\($0.optionalInt64(1).map(String.init) ?? "-")"
            } == ["1:-", "2:-", "3:2", "4:-", "5:4", "6:3", "7:-"])

        // It goes on from there: a new version, then trimming the history.
        h.clock.advance(seconds: 60)
        _ = try await reopened.push(Make.note(note, body: "four\n", base: 6), token: token)  // 8
        #expect(try await reopened.versions(token: token, of: .note(note)).versions.map(\.version) == [8, 6, 3, 2])
        #expect(try await reopened.version(token: token, of: .note(note), 3)?.note?.bodyBytes() == Data("two\n".utf8))
        h.clock.advance(seconds: 31 * Self.day)
        let trimmer = SyncServer(
            store: reopened.store, configuration: SyncServer.Configuration(historyRetentionSeconds: 30 * Self.day),
            clock: reopened.clock.clock)
        let report = try await trimmer.trimHistory()
        #expect(report.versions == 4, "versions 2, 3 and 6 of the note and the deleted note's text")
        #expect(try await reopened.versions(token: token, of: .note(note)).versions.map(\.version) == [8])
        #expect(try await reopened.versions(token: token, of: .note(gone)).versions.map(\.version) == [5])
        #expect(try await trimmer.trimHistory().versions == 0, "a second run finds nothing to do")
        await reopened.close()
    }

    /// Takes a version 6 store back to version 5's layout: the current body
    /// in `entities`, only replaced versions in `entity_versions`, each with
    /// the time its successor was made.
    static func downgradeToVersion5(_ path: String) throws {
        let connection = try Connection(path: path)
        try connection.execute(
            """
            ALTER TABLE entities ADD COLUMN body BLOB;
            UPDATE entities SET body = (SELECT v.body FROM entity_versions v
                WHERE v.account_id = entities.account_id AND v.kind = entities.kind AND v.id = entities.id
                    AND v.version = entities.version);
            CREATE TABLE entity_versions_5(
                account_id INTEGER NOT NULL,
                kind TEXT NOT NULL,
                id TEXT NOT NULL,
                version INTEGER NOT NULL,
                change_id TEXT NOT NULL,
                deleted INTEGER NOT NULL,
                name TEXT NOT NULL,
                body BLOB,
                parent_id TEXT,
                updated_at INTEGER NOT NULL,
                device TEXT,
                replaced_at INTEGER NOT NULL,
                PRIMARY KEY(account_id, kind, id, version));
            INSERT INTO entity_versions_5
            SELECT p.account_id, p.kind, p.id, p.version, p.change_id, p.deleted, p.name, p.body, p.parent_id,
                p.updated_at, p.device, w.updated_at
            FROM entity_versions p JOIN entity_versions w
                ON w.account_id = p.account_id AND w.kind = p.kind AND w.id = p.id AND w.replaces = p.version;
            DROP TABLE entity_versions;
            ALTER TABLE entity_versions_5 RENAME TO entity_versions;
            CREATE INDEX entity_versions_by_age ON entity_versions(account_id, replaced_at);
            PRAGMA user_version = 5;
            """)
    }
}
