import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

/// Ids, kinds and operations are parsed once, where they leave SQL: in the
/// outbox and the sync state, a value notesfs never writes there is a typed
/// error that names the table, never a crash, a skipped change or a guess.
@Suite struct DamagedRowTests {
    enum Damage: String, CaseIterable, Sendable {
        case entityID, kind, operation, changeID

        var sql: String {
            switch self {
            case .entityID: "UPDATE outbox SET entity_id = 'not-a-uuid'"
            case .kind: "UPDATE outbox SET entity_kind = 'notebook'"
            // The CHECK constraint keeps `op` to put/delete; only ignoring it gets another value in.
            case .operation: "PRAGMA ignore_check_constraints = 1; UPDATE outbox SET op = 'patch'"
            case .changeID: "UPDATE outbox SET change_id = 'x'"
            }
        }
    }

    @Test(arguments: [Damage.entityID, .kind, .operation])
    func aDamagedPendingRowIsATypedErrorWhenFrozen(_ damage: Damage) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        try fixture.store.createNote(in: .root, title: "a.md", body: Data(utf8: "a"))
        try damageOutbox(fixture, damage)
        #expect { try fixture.store.freezeBatch() } throws: { Self.namesTheDamagedOutbox($0) }
    }

    @Test(arguments: Damage.allCases)
    func aDamagedFrozenRowIsATypedErrorWhenResent(_ damage: Damage) throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        try fixture.store.createNote(in: .root, title: "a.md", body: Data(utf8: "a"))
        #expect(try fixture.store.freezeBatch().count == 1)
        try damageOutbox(fixture, damage)
        #expect { try fixture.store.freezeBatch() } throws: { Self.namesTheDamagedOutbox($0) }
    }

    @Test func everyChangeFrozenKeepsItsTypedEntityAndOperation() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        guard case .folder(let folder) = try fixture.store.makeDirectory(in: .root, name: "Work").ref else {
            Issue.record("a directory made in the root is a folder")
            return
        }
        let note = try fixture.store.createNote(in: .root, title: "a.md", body: Data(utf8: "a"))
        let batch = try fixture.store.freezeBatch()
        #expect(batch.map(\.ref) == [.folder(folder), .note(note)])
        #expect(batch.allSatisfy { $0.operation == .put })
        for change in batch { try fixture.store.settle(change.changeID, outcome: .applied(version: 1)) }
        try fixture.store.removeFile(in: .root, name: "a.md")
        let deletion = try fixture.store.freezeBatch()
        #expect(deletion.map(\.ref) == [.note(note)] && deletion.map(\.operation) == [.delete])
    }

    @Test func aDamagedDeviceIDIsATypedErrorNotANewDevice() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let db = try Connection(path: fixture.databasePath)
        try db.run("UPDATE sync_state SET device_id = 'laptop'")
        #expect {
            try fixture.store.syncState()
        } throws: { Self.names("sync_state", $0) }
        #expect {
            try fixture.store.device()
        } throws: { Self.names("sync_state", $0) }
    }

    static func namesTheDamagedOutbox(_ error: any Error) -> Bool { names("outbox", error) }

    static func names(_ table: String, _ error: any Error) -> Bool {
        guard let error = error as? StoreError, case .damaged(let what) = error else { return false }
        return what.hasPrefix(table)
    }

    private func damageOutbox(_ fixture: StoreFixture, _ damage: Damage) throws {
        let db = try Connection(path: fixture.databasePath)
        for statement in damage.sql.split(separator: ";") { try db.run(String(statement)) }
    }
}
