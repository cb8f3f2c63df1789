import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

/// Conflict copies on a real store: one per note and device, a further clash
/// adds its lines to that copy, a deleted copy comes back under its id, a
/// clash on a copy stays in the copy, and resolving is an ordinary edit.
@Suite struct ConflictCopyTests {
    /// A store holding note `n.md` with `body`, synced at version 1.
    struct Synced {
        let fixture: StoreFixture
        let id: NoteID
        var store: NotesStore { fixture.store }
        var version: Int64 = 1

        init(_ body: String, configuration: StoreConfiguration = StoreConfiguration()) throws {
            fixture = try StoreFixture(configuration: configuration)
            id = try fixture.store.createNote(in: .root, title: "n.md", body: Data(utf8: body))
            for change in try fixture.store.freezeBatch() {
                try fixture.store.settle(change.changeID, outcome: .applied(version: 1))
            }
        }

        /// Edits the note to `local` here, and settles its push against the server's `remote` (a new version).
        @discardableResult
        mutating func clash(local: String, remote: String) throws -> SettleReport {
            try store.replaceBody(of: id, with: Data(utf8: local))
            version += 1
            let server = RemoteEntity(.note(id), version: version, deleted: false,
                note: NoteContent(title: "n.md", body: Data(utf8: remote), folderID: nil))
            var report = SettleReport()
            for change in try store.freezeBatch() {
                let outcome: ChangeOutcome =
                    change.ref == .note(id)
                    ? .conflict(current: server) : .applied(version: version)
                let settled = try store.settle(change.changeID, outcome: outcome)
                if change.ref == .note(id) { report = settled }
            }
            // Whatever the merge queued is accepted as it is.
            for change in try store.freezeBatch() {
                version += 1
                try store.settle(change.changeID, outcome: .applied(version: version))
            }
            return report
        }

        func text(_ id: NoteID) throws -> String { String(decoding: try store.contents(of: .note(id)), as: UTF8.self) }

        func names() throws -> [String] { try store.list(directory: .root, afterCookie: 0, limit: 100).map(\.name) }

        func copyID() throws -> NoteID { ConflictPolicy.conflictCopyID(of: id, device: try store.device().id) }
    }

    @Test func aClashMakesOneCopyWithTheLocalTextAndAnIdFromNoteAndDevice() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        let report = try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        #expect(report.conflictCopy == (try synced.copyID()))
        #expect(try synced.text(synced.id) == "one\ntheirs\nthree\n")
        #expect(try synced.text(synced.copyID()) == "one\nmine\nthree\n")
        #expect(try synced.names().count == 2)
        #expect(try synced.names().contains { $0.hasPrefix("n (conflicted copy ") && $0.hasSuffix(").md") })
    }

    @Test func aSecondClashOnTheSameNoteUpdatesTheOneCopyKeepingEveryLine() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        let names = try synced.names()
        let report = try synced.clash(local: "one\nmine again\nthree\n", remote: "one\ntheirs again\nthree\n")
        #expect(report.conflictCopy == (try synced.copyID()))
        #expect(try synced.text(synced.id) == "one\ntheirs again\nthree\n")
        #expect(try synced.text(synced.copyID()) == "one\nmine\nmine again\nthree\n")
        // The same two names: no "(2)", no second copy.
        #expect(try synced.names() == names)
        // The copy's update is an ordinary edit that syncs.
        #expect(try synced.store.status().pendingCount == 0)
    }

    @Test func twentyClashesStillLeaveOneCopyHoldingEveryLine() throws {
        var synced = try Synced("head\nline\n")
        defer { synced.fixture.remove() }
        for round in 0..<20 {
            try synced.clash(local: "head\nmine \(round)\n", remote: "head\ntheirs \(round)\n")
        }
        #expect(try synced.names().count == 2)
        let copy = try synced.text(synced.copyID())
        for round in 0..<20 { #expect(copy.contains("mine \(round)\n")) }
    }

    @Test func aCopyThatWouldOutgrowTheNoteLimitLeavesTheNewClashInACopyOfItsOwn() throws {
        var small = StoreConfiguration()
        small.noteSizeLimitBytes = 40
        var synced = try Synced("head\nline\n", configuration: small)
        defer { synced.fixture.remove() }
        try synced.clash(local: "head\nmine, the first time\n", remote: "head\ntheirs 1\n")
        try synced.clash(local: "head\nmine, the second time\n", remote: "head\ntheirs 2\n")
        // The union of both would be over 40 bytes: the second clash has a copy of its own.
        let texts = try synced.store.list(directory: .root, afterCookie: 0, limit: 10)
            .filter { $0.ref != .note(synced.id) }.map { String(decoding: try synced.store.contents(of: $0.ref), as: UTF8.self) }
        #expect(texts.sorted() == ["head\nmine, the first time\n", "head\nmine, the second time\n"])
        #expect(try synced.store.status().pendingCount == 0)
    }

    @Test func aClashWhoseLinesAreAllInTheServersTextMakesNoCopy() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        // Deleted here, changed there: nothing of ours is lost by taking theirs.
        let report = try synced.clash(local: "one\nthree\n", remote: "one\nTWO\nthree\n")
        #expect(report.conflictCopy == nil)
        #expect(try synced.names() == ["n.md"])
    }

    @Test func aDeletedCopyComesBackUnderTheSameIdWithOnlyTheNewClash() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        let copyID = try synced.copyID()
        // Resolved (deleted) here, and the tombstone synced.
        try synced.store.resolveConflictCopy(copyID, keep: .note)
        for change in try synced.store.freezeBatch() {
            synced.version += 1
            try synced.store.settle(change.changeID, outcome: .applied(version: synced.version))
        }
        #expect(try synced.names() == ["n.md"])
        try synced.clash(local: "one\nnew mine\nthree\n", remote: "one\nnew theirs\nthree\n")
        #expect(try synced.text(copyID) == "one\nnew mine\nthree\n")
        #expect(try synced.names().count == 2)
    }

    @Test func aCopyDeletedOnAnotherMachineComesBackWhenItIsUpdatedHereMeanwhile() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        let copyID = try synced.copyID()
        // A second clash updates the copy here while another machine deleted it:
        // the update meets the tombstone, and an edit beats a delete.
        try synced.clash(local: "one\nmine again\nthree\n", remote: "one\ntheirs again\nthree\n")
        try synced.store.replaceBody(of: copyID, with: Data(utf8: "one\nmine\nmine again\nthree\nlater\n"))
        let change = try #require(try synced.store.freezeBatch().first { $0.ref == .note(copyID) })
        synced.version += 1
        let tombstone = RemoteEntity(.note(copyID), version: synced.version, deleted: true)
        let report = try synced.store.settle(change.changeID, outcome: .conflict(current: tombstone))
        #expect(report.requeued)
        #expect(try synced.text(copyID) == "one\nmine\nmine again\nthree\nlater\n")
    }

    @Test func aCopyEditedOnAnotherMachineTakesTheNextClashToo() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        let copyID = try synced.copyID()
        // Another machine tidied the copy; this one pulls that.
        synced.version += 1
        try synced.store.applyPulled(
            [RemoteEntity(.note(copyID), version: synced.version, deleted: false,
                          note: NoteContent(title: try synced.names().first { $0 != "n.md" } ?? "",
                                            body: Data(utf8: "mine\n"), folderID: nil))],
            cursor: "c\(synced.version)")
        try synced.clash(local: "one\nmine 2\nthree\n", remote: "one\ntheirs 2\nthree\n")
        #expect(try synced.text(copyID) == "mine\none\nmine 2\nthree\n")
        #expect(try synced.names().count == 2)
    }

    @Test func aClashOnAConflictCopyKeepsBothSidesInTheCopy() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        let copyID = try synced.copyID()
        let copyTitle = try #require(try synced.names().first { $0 != "n.md" })
        // Here the copy is edited; elsewhere the same line of it was edited too.
        try synced.store.replaceBody(of: copyID, with: Data(utf8: "one\nmine, edited here\nthree\n"))
        let change = try #require(try synced.store.freezeBatch().first)
        synced.version += 1
        let server = RemoteEntity(.note(copyID), version: synced.version, deleted: false,
            note: NoteContent(title: copyTitle, body: Data(utf8: "one\nmine, edited there\nthree\n"), folderID: nil))
        let report = try synced.store.settle(change.changeID, outcome: .conflict(current: server))
        #expect(report.conflictCopy == nil)
        #expect(try synced.text(copyID) == "one\nmine, edited there\nmine, edited here\nthree\n")
        #expect(try synced.names().count == 2)
    }

    @Test func copiesAreListedWithTheirNotes() throws {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        #expect(try synced.store.conflictCopies().isEmpty)
        try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        let copies = try synced.store.conflictCopies()
        #expect(copies.count == 1)
        #expect(copies.first?.copy == (try synced.copyID()))
        #expect(copies.first?.note == synced.id)
        #expect(copies.first?.notePath == "/n.md")
        let copyPath = try #require(copies.first?.copyPath)
        #expect(try synced.store.noteID(atPath: copyPath) == (try synced.copyID()))
        let listing = ConflictCopyInfo.listing(copies)
        #expect(listing.contains(copyPath + "\n  copy of /n.md\n"))
        #expect(listing.contains("notesfs conflicts resolve PATH --keep note|copy|both"))
        #expect(try synced.store.status().humanText(nowNanoseconds: 0).contains("notesfs conflicts resolve"))
    }

    @Test func aCopyMadeOnAnotherMachineIsFoundByItsTitle() throws {
        let synced = try Synced("one\n")
        defer { synced.fixture.remove() }
        let otherCopy = NoteID()
        try synced.store.applyPulled(
            [RemoteEntity(.note(otherCopy), version: 7, deleted: false,
                          note: NoteContent(title: "n (conflicted copy desk 2026-01-02).md",
                                            body: Data(utf8: "desk\n"), folderID: nil))],
            cursor: "c7")
        let copies = try synced.store.conflictCopies()
        #expect(copies.map(\.copy) == [otherCopy])
        #expect(copies.first?.note == synced.id)
    }

    @Test(arguments: [
        (ConflictResolution.note, "one\ntheirs\nthree\n"),
        (ConflictResolution.copy, "one\nmine\nthree\n"),
        (ConflictResolution.both, "one\ntheirs\nthree\nmine\n"),
    ])
    func resolvingKeepsWhatWasAskedForAndDeletesTheCopyAsSyncedEdits(keep: ConflictResolution, expected: String)
        throws
    {
        var synced = try Synced("one\ntwo\nthree\n")
        defer { synced.fixture.remove() }
        try synced.clash(local: "one\nmine\nthree\n", remote: "one\ntheirs\nthree\n")
        let copyID = try synced.copyID()
        #expect(try synced.store.resolveConflictCopy(copyID, keep: keep) == synced.id)
        #expect(try synced.text(synced.id) == expected)
        #expect(try synced.names() == ["n.md"])
        #expect(try synced.store.conflictCopies().isEmpty)
        // Both go out as ordinary changes: the copy's delete, and the note's edit unless kept as it was.
        let changes = try synced.store.freezeBatch()
        #expect(changes.contains { $0.ref == .note(copyID) && $0.operation == .delete })
        #expect(changes.contains { $0.ref == .note(synced.id) } == (keep != .note))
    }

    @Test func resolvingSomethingThatIsNotACopyFails() throws {
        let synced = try Synced("one\n")
        defer { synced.fixture.remove() }
        #expect(throws: StoreError.self) { try synced.store.resolveConflictCopy(synced.id, keep: .copy) }
        #expect(try synced.text(synced.id) == "one\n")
    }
}
