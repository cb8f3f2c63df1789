import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import SyncEngine
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// Only a `refused` result inside a push reply refuses a change: every way a
/// request can fail (docs/sync.md "When the server says no") fails the run,
/// renames nothing, keeps the change frozen, and the same change is applied
/// once when the cause is gone.
@Suite struct PushFailureTests {
    /// A failure as it arrives, and what status must say about it.
    struct Case: Sendable, CustomTestStringConvertible {
        let fault: Fault
        let statusSays: String
        var testDescription: String { "\(fault)" }
    }

    static let cases: [Case] = [
        Case(fault: .connectionReset, statusSays: "cannot reach the server"),
        Case(fault: .untrustedCertificate, statusSays: "certificate not trusted"),
        Case(fault: .status(401), statusSays: "check --token-file"),
        Case(fault: .status(403), statusSays: "the server or a proxy refused access (403"),
        Case(fault: .status(404), statusSays: "answered 404"),
        Case(fault: .status(400), statusSays: "the server refused the request (400"),
        Case(fault: .status(413), statusSays: "raise its request size limit"),
        Case(fault: .status(422), statusSays: "the server refused the request (422"),
        Case(fault: .status(500), statusSays: "the server failed (500"),
        Case(fault: .status(502), statusSays: "the server failed (502"),
        Case(fault: .cutReply(bytes: 12), statusSays: "unreadable"),
        Case(fault: .malformedReply, statusSays: "unreadable"),
    ]

    /// The outbox's change ids, in order, and the note's name, read from the file.
    static func outbox(_ store: NotesStore) throws -> [String] {
        let db = try Connection(path: store.path, options: .init(mode: .readOnly, walJournal: false))
        return try db.query("SELECT change_id FROM outbox ORDER BY seq") { $0.string(0) }
    }

    @Test(arguments: cases)
    func aFailedPushOfOneNoteRenamesNothingAndTheSameChangeIsAppliedOnceLater(_ failure: Case) async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let id = try a.store.createNote(in: .root, title: "n.md", body: Data("typed offline\n".utf8))
        a.transport.queueFaults([failure.fault])
        let failed = await a.engine.sync()

        #expect(!failed.succeeded)
        #expect(try a.store.lookup(in: .root, name: "n (not synced).md") == nil)
        #expect(try a.store.lookup(in: .root, name: "n.md") != nil)
        let status = try a.store.status()
        #expect(status.refusals.isEmpty)
        #expect(status.pendingCount == 1)
        #expect(status.sync.lastFailed)
        let error = status.sync.lastError ?? ""
        #expect(error.contains(failure.statusSays), "status said: \(error)")
        let frozen = try Self.outbox(a.store)
        #expect(frozen.count == 1)

        // An edit made while the change waits goes behind it, not into it.
        try a.store.replaceBody(of: id, with: Data("typed offline\nand more\n".utf8))
        try await world.syncToQuiet([a, b])
        #expect(try a.store.status().refusals.isEmpty)
        #expect(try b.store.contents(of: try #require(try b.store.lookup(in: .root, name: "n.md")).ref)
            == Data("typed offline\nand more\n".utf8))
        #expect(try b.store.status().noteCount == 1)
        let serverDB = try Connection(
            path: world.serverStore.path, options: .init(mode: .readOnly, walJournal: false))
        let changeIDs = try serverDB.query("SELECT change_id FROM seen_changes") { ChangeID($0.string(0)) }
        // The frozen change went out with its id (a retry, not a new change),
        // and the edit behind it as a second change: nothing applied twice.
        let frozenID = try #require(frozen.first.flatMap { ChangeID($0) })
        #expect(changeIDs.contains(frozenID))
        #expect(changeIDs.count == 2)
    }

    @Test(arguments: [Fault.status(403), .status(404), .untrustedCertificate, .connectionReset])
    func aFailedPushOfManyNotesKeepsThemAllPendingAndFrozen(_ fault: Fault) async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        for index in 0..<5 {
            try a.store.createNote(in: .root, title: "n\(index).md", body: Data("line \(index)\n".utf8))
        }
        a.transport.queueFaults([fault])
        #expect(!(await a.engine.sync().succeeded))
        let frozen = try Self.outbox(a.store)
        #expect(frozen.count == 5)
        #expect(try a.store.status().refusals.isEmpty)
        #expect(try a.store.status().pendingCount == 5)
        try await world.syncToQuiet([a, b])
        #expect(try b.store.status().noteCount == 5)
        #expect(try a.store.status().refusals.isEmpty)
    }

    @Test func aFailureThatLastsManyRunsRenamesNothingAndEndsWhenTheCauseIsFixed() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        try a.store.createNote(in: .root, title: "n.md", body: Data("v1\n".utf8))
        a.transport.queueFaults(Array(repeating: .status(404), count: 4))
        #expect(!(await a.engine.sync().succeeded))
        let frozen = try Self.outbox(a.store)
        for _ in 0..<3 {
            #expect(!(await a.engine.sync().succeeded))
            #expect(try Self.outbox(a.store) == frozen)
        }
        #expect(try a.store.lookup(in: .root, name: "n (not synced).md") == nil)
        try await world.syncToQuiet([a, b])
        #expect(try b.store.lookup(in: .root, name: "n.md") != nil)
        #expect(try a.store.status().refusals.isEmpty)
    }

    @Test func aNoteOverTheServersRequestLimitIsRefusedAloneAndTheOthersSync() async throws {
        // A request body limit far below the note limit: the server answers
        // a push carrying the big note with its own 413 payload_too_large.
        let limits = ProtocolLimits(requestBodyBytesMax: 3_000)
        let world = try await SyncWorld(configuration: .init(limits: limits))
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        try a.store.createNote(in: .root, title: "big.md", body: Data(repeating: 65, count: 6_000))
        try a.store.createNote(in: .root, title: "small.md", body: Data("fine\n".utf8))
        try await world.syncToQuiet([a, b])
        #expect(try b.store.lookup(in: .root, name: "small.md") != nil)
        #expect(try a.store.lookup(in: .root, name: "big (not synced).md") != nil)
        let refusals = try a.store.status().refusals
        #expect(refusals.count == 1)
        #expect(refusals.first?.reason.contains("payload_too_large") == true)
    }

    @Test func aTransportErrorNeverRefusesAChangeEvenAlone() {
        let failures: [TransportError] = [
            .offline("reset"), .unauthorized("x"), .forbidden("x"), .notFound(server: "http://h", message: "x"),
            .untrustedCertificate("x"), .badURL("x"), .serverBroke("x"), .cursorGone,
            .rejected(status: 400, code: "bad_request", message: "x"),
            .rejected(status: 413, code: "http_413", message: "a proxy's page"),
            .rejected(status: 413, code: "too_many_changes", message: "x"),
        ]
        for failure in failures {
            #expect(failure.refusesLoneChange == false, "\(failure)")
        }
        #expect(TransportError.rejected(status: 413, code: ErrorCode.payloadTooLarge.rawValue, message: "x").refusesLoneChange)
    }

    @Test func httpAnswersAreClassifiedWithTheirRemedy() {
        let page = Data("<html><head><title>404 Not Found</title></head></html>".utf8)
        let notFound = TransportDecoding.error(status: 404, body: page, server: "http://host:8080/notes")
        #expect(notFound == .notFound(server: "http://host:8080/notes", message: "404 Not Found"))
        #expect(notFound.description.contains("the server at http://host:8080/notes answered 404"))
        #expect(notFound.description.contains("is the URL right?"))
        #expect(TransportDecoding.error(status: 403, body: Data(), server: nil) == .forbidden("an empty answer"))
        #expect(TransportDecoding.error(status: 503, body: Data(), server: nil).isTransient)
        #expect(!TransportDecoding.error(status: 404, body: Data(), server: nil).isTransient)
    }
}
