import Foundation
import NotesModel
import PostgresKit
import SQLiteKit
import SyncProtocol
import SyncServer
import SyncServerSQLite
import TestSupport
import Testing

/// Keeping and trimming the history (docs/server.md "History") on every
/// store, with the server's clock moved by the test.
@Suite struct HistoryTrimTests {
    static let day: Double = 86_400

    /// A server over the harness's store that trims with `configuration`.
    static func trimmer(_ h: Harness, _ configuration: SyncServer.Configuration) -> SyncServer {
        SyncServer(store: h.store, configuration: configuration, clock: h.clock.clock)
    }

    @Test(arguments: StoreFactory.all)
    func versionsReplacedBeforeThePeriodGoAndEverythingAfterItStays(factory: StoreFactory) async throws {
        let h = try Harness(factory)
        let token = try await h.account()
        let server = Self.trimmer(h, SyncServer.Configuration(historyRetentionSeconds: 30 * Self.day))
        let note = NoteID(), gone = NoteID(), kept = NoteID()
        _ = try await h.push(Make.note(note, body: "1\n"), token: token)  // 1
        _ = try await h.push(Make.note(note, body: "2\n", base: 1), token: token)  // 2
        _ = try await h.push(Make.note(note, body: "3\n", base: 2), token: token)  // 3
        _ = try await h.push(Make.note(gone, body: "gone\n"), token: token)  // 4
        _ = try await h.push(.delete(.note(gone), baseVersion: 4), token: token)  // 5
        let dayZero = h.now
        h.clock.advance(seconds: 25 * Self.day)
        _ = try await h.push(Make.note(kept, body: "kept\n"), token: token)  // 6
        _ = try await h.push(.delete(.note(kept), baseVersion: 6), token: token)  // 7
        h.clock.advance(seconds: 6 * Self.day)
        _ = try await h.push(Make.note(note, body: "4\n", base: 3), token: token)  // 8

        let report = try await server.trimHistory()
        // Replaced on day 0, 31 days ago: versions 1, 2 and the deleted note's text 4.
        #expect(report.versions == 3)
        #expect(report.bytes == 3 * Int64("todo.md".utf8.count) + 2 + 2 + 5)
        #expect(report.done)
        #expect(try await h.versions(token: token, of: .note(note)).versions.map(\.version) == [8, 3])
        #expect(try await h.versions(token: token, of: .note(gone)).versions.map(\.version) == [5])
        // Deleted within the period: the tombstone and the text before it stay.
        #expect(try await h.versions(token: token, of: .note(kept)).versions.map(\.version) == [7, 6])
        #expect(try await h.version(token: token, of: .note(kept), 6)?.note?.bodyBytes() == Data("kept\n".utf8))

        // The tree is whole from the newest replacement trimmed (day 0) on.
        let page = try await h.versions(token: token, of: .note(note))
        let keptSince = try #require(page.keptSince)
        #expect(keptSince <= dayZero && dayZero.timeIntervalSince(keptSince) < 60)
        let tree = try await h.wholeTree(token: token, at: dayZero.addingTimeInterval(Self.day))
        #expect(tree.map(\.version) == [3])
        #expect(try await server.trimHistory().versions == 0, "a second run finds nothing to do")
        await h.close()
    }

    @Test(arguments: StoreFactory.all)
    func theBudgetDropsTheOldestVersionsButNeverADeletedNotesLastText(factory: StoreFactory) async throws {
        let h = try Harness(factory)
        let token = try await h.account()
        let deleted = NoteID(), busy = NoteID()
        let text = String(repeating: "x", count: 300)
        _ = try await h.push(Make.note(deleted, title: "d.md", body: text), token: token)  // 1
        _ = try await h.push(.delete(.note(deleted), baseVersion: 1), token: token)  // 2: keeps 304 bytes
        h.clock.advance(seconds: 60)
        _ = try await h.push(Make.note(busy, title: "busy.md", body: text), token: token)  // 3
        for base in Int64(3)...6 {  // 4…7: version 3 keeps 307 bytes, the others 308
            _ = try await h.push(Make.note(busy, title: "busy.md", body: text + String(base), base: base), token: token)
        }
        // 304 + 307 + 3 × 308 = 1535 bytes held: the two oldest of the busy note go.
        let fits = Self.trimmer(h, SyncServer.Configuration(historyBudget: HistoryBudget(accountBytesMax: 1_000)))
        let report = try await fits.trimHistory()
        #expect(report.versions == 2)
        #expect(report.bytes == 615)
        #expect(report.done)
        #expect(try await h.versions(token: token, of: .note(busy)).versions.map(\.version) == [7, 6, 5])
        #expect(try await h.versions(token: token, of: .note(deleted)).versions.map(\.version) == [2, 1])

        // A budget nothing fits in: every replaced version goes but the last
        // text of the deleted note.
        let tiny = Self.trimmer(h, SyncServer.Configuration(historyBudget: HistoryBudget(accountBytesMax: 100)))
        let second = try await tiny.trimHistory()
        #expect(second.versions == 2 && second.done)
        #expect(try await h.versions(token: token, of: .note(busy)).versions.map(\.version) == [7])
        #expect(try await h.version(token: token, of: .note(deleted), 1)?.note?.bodyBytes() == Data(text.utf8))
        #expect(try await tiny.trimHistory().versions == 0)

        // Brought back, the note's old text is an ordinary old version again
        // (the tombstone holds no text: the history fits without it going).
        _ = try await h.push(Make.note(deleted, title: "d.md", body: "back\n", base: 2), token: token)  // 8
        #expect(try await tiny.trimHistory().versions == 1)
        #expect(try await h.versions(token: token, of: .note(deleted)).versions.map(\.version) == [8, 2])
        await h.close()
    }

    @Test(arguments: StoreFactory.all)
    func theDefaultBudgetIsFourTimesTheLiveTextAndAtLeastTheFloor(factory: StoreFactory) async throws {
        #expect(HistoryBudget().bytesMax(liveBytes: 1_000) == 64 << 20)
        #expect(HistoryBudget().bytesMax(liveBytes: 100 << 20) == 400 << 20)
        #expect(HistoryBudget(accountBytesMax: 5).bytesMax(liveBytes: 100 << 20) == 5)
        let h = try Harness(factory)
        let token = try await h.account()
        let note = NoteID()
        _ = try await h.push(Make.note(note, body: String(repeating: "a", count: 93)), token: token)  // 100 live bytes
        for base in Int64(1)...5 {
            _ = try await h.push(Make.note(note, body: String(repeating: "b", count: 93 + Int(base)), base: base), token: token)
        }
        // 5 versions of 100…104 bytes held; live 105 bytes, times 4 is 420.
        let server = Self.trimmer(
            h, SyncServer.Configuration(historyBudget: HistoryBudget(liveMultiple: 4, floorBytes: 0)))
        #expect(try await server.trimHistory().versions == 1)
        #expect(try await h.versions(token: token, of: .note(note)).versions.map(\.version) == [6, 5, 4, 3, 2])
        await h.close()
    }

    @Test(arguments: StoreFactory.all)
    func trimmingGoesInBoundedStepsAndTheNextRunGoesOn(factory: StoreFactory) async throws {
        let h = try Harness(factory)
        let token = try await h.account()
        let note = NoteID()
        _ = try await h.push(Make.note(note, body: "0\n"), token: token)
        for base in Int64(1)...9 { _ = try await h.push(Make.note(note, body: "\(base)\n", base: base), token: token) }
        h.clock.advance(seconds: 31 * Self.day)
        _ = try await h.push(Make.note(note, body: "last\n", base: 10), token: token)
        let server = Self.trimmer(h, SyncServer.Configuration())
        let first = try await server.trimHistory(versionsPerStep: 2, stepsMax: 2)
        #expect(first.versions == 4 && !first.done)
        let second = try await server.trimHistory(versionsPerStep: 2, stepsMax: 100)
        #expect(second.versions == 5 && second.done)
        #expect(try await h.versions(token: token, of: .note(note)).versions.map(\.version) == [11, 10])
        await h.close()
    }

    @Test(arguments: StoreFactory.all)
    func purgingATombstoneTakesItsHistoryAndTheTreeBeforeIsNoLongerWhole(factory: StoreFactory) async throws {
        let h = try Harness(factory)  // tombstones are kept one day
        let token = try await h.account()
        let gone = NoteID(), live = NoteID()
        _ = try await h.push([Make.note(gone, body: "a\n"), Make.note(live, body: "a\n")], token: token)
        _ = try await h.push([Make.note(gone, body: "b\n", base: 1), Make.note(live, body: "b\n", base: 2)], token: token)
        let deletedAt = h.now
        _ = try await h.push(.delete(.note(gone), baseVersion: 3), token: token)
        #expect(try await h.versions(token: token, of: .note(gone)).keptSince == nil)
        h.clock.advance(seconds: 2 * Self.day)
        #expect(try await h.server.purgeExpired().tombstones == 1)
        #expect(try await h.versions(token: token, of: .note(gone)).versions.isEmpty)
        let page = try await h.versions(token: token, of: .note(live))
        #expect(page.versions.map(\.version) == [4, 2])
        let keptSince = try #require(page.keptSince)
        #expect(keptSince >= deletedAt.addingTimeInterval(-1))
        await h.close()
    }

    @Test(arguments: StoreFactory.all)
    func aStoreFromBeforeTheHistoryMigratesAndKeepsEveryVersionFromThenOn(factory: StoreFactory) async throws {
        let h = try Harness(factory)
        let token = try await h.account("old")
        let note = NoteID()
        _ = try await h.push(Make.note(note, body: "before\n"), token: token)
        await h.close(keepData: true)
        try Self.downgradeToVersion2(factory, h.directory)

        let reopened = try Harness(factory, directory: h.directory)
        let migrated = try await reopened.versions(token: token, of: .note(note))
        #expect(migrated.versions.map(\.version) == [1])
        #expect(migrated.versions.first?.device == nil)
        #expect(migrated.keptSince != nil, "nothing before the migration was kept")
        _ = try await reopened.push(Make.note(note, body: "after\n", base: 1), token: token)
        let page = try await reopened.versions(token: token, of: .note(note))
        #expect(page.versions.map(\.version) == [2, 1])
        #expect(page.versions.map(\.device) == [reopened.device, nil])
        #expect(try await reopened.version(token: token, of: .note(note), 1)?.note?.bodyBytes() == Data("before\n".utf8))
        let fresh = try await reopened.account("new")
        _ = try await reopened.push(Make.note(), token: fresh)
        #expect(try await reopened.versions(token: fresh, of: .note(note)).keptSince == nil)
        await reopened.close()
    }

    /// Takes the store in `directory` back to schema version 2, as a notesfs
    /// from before the history (and device names) left it.
    static func downgradeToVersion2(_ factory: StoreFactory, _ directory: TemporaryDirectory) throws {
        let script = """
            DROP TABLE devices;
            DROP TABLE entity_versions;
            ALTER TABLE entities DROP COLUMN device;
            ALTER TABLE accounts DROP COLUMN history_since;
            """
        if factory.name == StoreFactory.sqlite.name {
            let path = SQLiteServerStore.databasePath(inDirectory: directory.path)
            // Version 6's bodies go back into `entities` first.
            try SQLiteBodiesOnceTests.downgradeToVersion5(path)
            let connection = try Connection(path: path)
            try connection.execute(script + "PRAGMA user_version = 2;")
        } else {
            let connection = try PostgresConnection(
                conninfo: try PostgresTestCluster.conninfo(schema: PostgresTestCluster.schema(for: directory)))
            try connection.executeScript(script + "UPDATE notesfs_schema SET version = 2;")
        }
    }
}
