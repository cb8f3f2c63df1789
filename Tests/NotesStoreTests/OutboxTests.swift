import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

@Suite struct OutboxTests {
    /// Outbox rows as (kind, id, op, state), read straight from the file.
    func outbox(_ fixture: StoreFixture) throws -> [[String]] {
        let db = try Connection(path: fixture.databasePath)
        return try db.query("SELECT entity_kind, entity_id, op, state FROM outbox ORDER BY seq") { row in
            (0..<4).map { row.string($0) }
        }
    }

    @Test func aStreamOfEditsIsOnePendingRow() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let entry = try fixture.store.createFile(in: .root, name: "a.md")
        for index in 0..<10 {
            try fixture.store.write(entry.ref, offset: Int64(index), bytes: Data(utf8: "x"))
        }
        let rows = try outbox(fixture)
        #expect(rows.count == 1)
        #expect(rows.first?[2] == "put")
        #expect(rows.first?[3] == "pending")
    }

    @Test func aSaveWithIdenticalBytesWritesNoOutboxRow() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "a.md", body: Data(utf8: "same"))
        let change = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.settle(change.changeID, outcome: .applied(version: 1))
        #expect(try outbox(fixture).isEmpty)
        try fixture.store.replaceBody(of: id, with: Data(utf8: "same"))
        try fixture.store.truncate(.note(id), to: 4)
        try fixture.store.write(.note(id), offset: 0, bytes: Data(utf8: "sa"))
        #expect(try outbox(fixture).isEmpty)
    }

    @Test func aNoteDeletedBeforeAnythingWasFrozenSendsNothingAndIsGoneOnceOutOfTheTrash() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        try fixture.store.createNote(in: .root, title: "temp.md", body: Data(utf8: "x"))
        try fixture.store.removeFile(in: .root, name: "temp.md")
        #expect(try outbox(fixture).isEmpty)
        #expect(try fixture.store.freezeBatch().isEmpty)
        try fixture.store.beginSession()
        #expect(try fixture.store.trashEntries().count == 1)
        try fixture.store.emptyTrash()
        try fixture.store.beginSession()
        let db = try Connection(path: fixture.databasePath)
        #expect(try db.queryOne("SELECT count(*) FROM notes") { $0.int(0) } == 0)
        #expect(try fixture.store.freezeBatch().isEmpty)
    }

    @Test func aNoteDeletedAfterItWasSentBecomesATombstone() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        try fixture.store.createNote(in: .root, title: "n.md", body: Data(utf8: "x"))
        _ = try fixture.store.freezeBatch()  // in flight, answer unknown
        try fixture.store.removeFile(in: .root, name: "n.md")
        let rows = try outbox(fixture)
        #expect(rows.map { [$0[2], $0[3]] } == [["put", "in_flight"], ["delete", "pending"]])
        #expect(try fixture.store.lookup(in: .root, name: "n.md") == nil)
    }

    @Test func aFrozenChangeIsNotTouchedByLaterEdits() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "n.md", body: Data(utf8: "one\n"))
        let frozen = try fixture.store.freezeBatch()
        try fixture.store.replaceBody(of: id, with: Data(utf8: "one\ntwo\n"))
        // A retry resends exactly the frozen payload, same change id.
        let resent = try fixture.store.freezeBatch()
        #expect(resent == frozen)
        #expect(resent.first?.note?.body == Data(utf8: "one\n"))
        #expect(try outbox(fixture).map { $0[3] } == ["in_flight", "pending"])
    }

    @Test func anAppliedChangeKeepsNewerEditsQueuedOnTheNewBase() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "n.md", body: Data(utf8: "one\n"))
        let first = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.replaceBody(of: id, with: Data(utf8: "one\ntwo\n"))
        try fixture.store.settle(first.changeID, outcome: .applied(version: 7))
        let second = try #require(try fixture.store.freezeBatch().first)
        #expect(second.baseVersion == 7)
        #expect(second.note?.body == Data(utf8: "one\ntwo\n"))
        #expect(second.changeID != first.changeID)
        try fixture.store.settle(second.changeID, outcome: .applied(version: 8))
        #expect(try outbox(fixture).isEmpty)
        #expect(try fixture.store.syncInfo(for: .note(id)).state == .synced)
    }

    @Test func aConflictMergesTheCurrentRowSoTextTypedAfterTheFreezeSurvives() throws {
        var keepBoth = StoreConfiguration()
        keepBoth.mergeNote = NoteMergers.keepBoth
        let fixture = try StoreFixture(configuration: keepBoth)
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "n.md", body: Data(utf8: "base\n"))
        let create = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.settle(create.changeID, outcome: .applied(version: 1))
        try fixture.store.replaceBody(of: id, with: Data(utf8: "base\nfrozen\n"))
        let edit = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.replaceBody(of: id, with: Data(utf8: "base\nfrozen\nafter freeze\n"))
        let remote = RemoteEntity(.note(id), version: 5, deleted: false,
            note: NoteContent(title: "n.md", body: Data(utf8: "remote\n"), folderID: nil))
        let report = try fixture.store.settle(edit.changeID, outcome: .conflict(current: remote))
        // keepBoth: the note takes the server's text, the local text is a copy.
        #expect(try fixture.store.contents(of: .note(id)) == Data(utf8: "remote\n"))
        let copy = try #require(report.conflictCopy)
        #expect(try fixture.store.contents(of: .note(copy)) == Data(utf8: "base\nfrozen\nafter freeze\n"))
        // The same answer again (a duplicated reply) changes nothing.
        #expect(try fixture.store.settle(edit.changeID, outcome: .conflict(current: remote)) == SettleReport())
        let next = try fixture.store.freezeBatch()
        #expect(next.map(\.ref) == [.note(copy)])
    }

    @Test func aPushsAnswersSettleTogetherInOrderAndARepeatedAnswerChangesNothing() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let ids = try (0..<3).map { try fixture.store.createNote(in: .root, title: "n\($0).md", body: Data(utf8: "v\($0)\n")) }
        let batch = try fixture.store.freezeBatch()
        #expect(batch.count == 3)
        try fixture.store.replaceBody(of: ids[1], with: Data(utf8: "v1\nafter freeze\n"))
        let remote = RemoteEntity(.note(ids[2]), version: 9, deleted: false,
            note: NoteContent(title: "n2.md", body: Data(utf8: "v2\nremote\n"), folderID: nil))
        let reports = try fixture.store.settle([
            (batch[0].changeID, .applied(version: 1)), (batch[1].changeID, .applied(version: 2)),
            (batch[2].changeID, .conflict(current: remote)), (batch[0].changeID, .applied(version: 1)),
        ])
        #expect(reports.count == 4)
        #expect(reports[3] == SettleReport())
        // Applied answers are clean; the edit made after the freeze stays queued;
        // the conflict took the server's text (it holds every local line).
        let pending = try fixture.store.freezeBatch()
        #expect(Set(pending.map(\.ref)) == [.note(ids[1])])
        #expect(try fixture.store.contents(of: .note(ids[2])) == Data(utf8: "v2\nremote\n"))
        #expect(try fixture.store.status().pendingCount == 1)
    }

    @Test func aConflictWithEditsToDifferentLinesMergesIntoOneNote() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "n.md", body: Data(utf8: "one\ntwo\nthree\n"))
        let create = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.settle(create.changeID, outcome: .applied(version: 1))
        try fixture.store.replaceBody(of: id, with: Data(utf8: "ONE\ntwo\nthree\n"))
        let edit = try #require(try fixture.store.freezeBatch().first)
        let remote = RemoteEntity(.note(id), version: 2, deleted: false,
            note: NoteContent(title: "n.md", body: Data(utf8: "one\ntwo\nTHREE\n"), folderID: nil))
        let report = try fixture.store.settle(edit.changeID, outcome: .conflict(current: remote))
        #expect(report.conflictCopy == nil)
        #expect(report.requeued)
        #expect(try fixture.store.contents(of: .note(id)) == Data(utf8: "ONE\ntwo\nTHREE\n"))
        let resend = try #require(try fixture.store.freezeBatch().first)
        #expect(resend.baseVersion == 2)
        #expect(resend.note?.body == Data(utf8: "ONE\ntwo\nTHREE\n"))
    }

    @Test func aConflictWhoseMergeEqualsTheServerQueuesNothing() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "n.md", body: Data(utf8: "a\n"))
        let create = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.settle(create.changeID, outcome: .applied(version: 1))
        try fixture.store.replaceBody(of: id, with: Data(utf8: "b\n"))
        let edit = try #require(try fixture.store.freezeBatch().first)
        let remote = RemoteEntity(.note(id), version: 2, deleted: false,
            note: NoteContent(title: "n.md", body: Data(utf8: "b\n"), folderID: nil))
        let report = try fixture.store.settle(edit.changeID, outcome: .conflict(current: remote))
        #expect(report.conflictCopy == nil)
        #expect(!report.requeued)
        #expect(try outbox(fixture).isEmpty)
    }

    @Test func aRefusedChangeKeepsTheTextLocallyAndConvergesToTheServer() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let id = try fixture.store.createNote(in: .root, title: "big.md", body: Data(utf8: "synced\n"))
        let create = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.settle(create.changeID, outcome: .applied(version: 3))
        try fixture.store.replaceBody(of: id, with: Data(utf8: "too big\n"))
        let edit = try #require(try fixture.store.freezeBatch().first)
        try fixture.store.replaceBody(of: id, with: Data(utf8: "too big\nand more\n"))
        let report = try fixture.store.settle(edit.changeID, outcome: .refused(reason: "note too large"))
        #expect(report.keptAs == "big (not synced).md")
        let kept = try #require(try fixture.store.lookup(in: .root, name: "big (not synced).md"))
        #expect(try fixture.store.contents(of: kept.ref) == Data(utf8: "too big\nand more\n"))
        #expect(try fixture.store.contents(of: .note(id)) == Data(utf8: "synced\n"))
        #expect(try outbox(fixture).isEmpty)
        let status = try fixture.store.status()
        #expect(status.refusals.first?.keptAt == "/big (not synced).md")
    }

    @Test func frozenBatchesPutParentsBeforeChildren() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let inner = try fixture.store.makeFolders(path: ["a", "b", "c"])
        try fixture.store.createNote(in: inner, title: "n.md", body: Data(utf8: "x"))
        let batch = try fixture.store.freezeBatch()
        #expect(batch.map(\.kind) == [.folder, .folder, .folder, .note])
        #expect(batch.prefix(3).map { $0.folder?.name } == ["a", "b", "c"])
    }

    @Test func batchesArePackedByCountAndBytes() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        for index in 0..<5 {
            try fixture.store.createNote(in: .root, title: "n\(index)", body: Data(count: 1_000))
        }
        #expect(try fixture.store.freezeBatch(maxCount: 2).count == 2)
        let store2 = try StoreFixture()
        defer { store2.remove() }
        for index in 0..<5 {
            try store2.store.createNote(in: .root, title: "n\(index)", body: Data(count: 1_000))
        }
        #expect(try store2.store.freezeBatch(maxBytes: 2_500).count == 2)
        #expect(try store2.store.freezeBatch(maxBytes: 10).count == 2)  // in-flight rows are always resent
    }

    @Test func theMassDeleteGuardHoldsTombstonesButLetsOtherChangesFlow() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        for index in 0..<10 {
            try fixture.store.createNote(in: .root, title: "n\(index)", body: Data(utf8: "x"))
        }
        for change in try fixture.store.freezeBatch() {
            try fixture.store.settle(change.changeID, outcome: .applied(version: 1))
        }
        try fixture.store.recordSyncRun(succeeded: true, error: nil)
        for index in 0..<8 { try fixture.store.removeFile(in: .root, name: "n\(index)") }
        try fixture.store.replaceBody(of: try #require(try fixture.store.lookup(in: .root, name: "n9")).ref.noteID,
                                      with: Data(utf8: "edited"))
        let batch = try fixture.store.freezeBatch()
        #expect(batch.count == 1)
        #expect(batch.first?.isDelete == false)
        #expect(try fixture.store.status().massDeleteHold.notesToSend == 8)
        try fixture.store.confirmMassDelete()
        #expect(try fixture.store.freezeBatch().filter(\.isDelete).count == 8)
    }
}

extension EntryRef {
    var noteID: NoteID {
        get throws {
            guard case .note(let id) = self else { throw StoreError.notFound("not a note") }
            return id
        }
    }
}
