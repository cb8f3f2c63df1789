import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// A store and a way in: every contract test runs on each.
struct ContractTarget: Sendable, CustomTestStringConvertible {
    let store: StoreFactory
    let transport: TransportKind
    var testDescription: String { "\(store) via \(transport)" }

    static let all: [ContractTarget] = StoreFactory.all.flatMap { store in
        TransportKind.all.map { ContractTarget(store: store, transport: $0) }
    }

    func harness(limits: ProtocolLimits = .standard) throws -> Harness {
        try Harness(store, transport, limits: limits)
    }
}

/// The server's promises (DESIGN.md "The sync protocol", "Server rules"),
/// checked against every `ServerStore` and through every transport.
@Suite struct ServerContractTests {
    @Test(arguments: ContractTarget.all)
    func aCreateThenAnUpdateOnTheRightBaseApply(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let id = NoteID()
        let created = try await h.push(Make.note(id, body: "one\n"), token: token)
        #expect(created.appliedVersion == 1)
        let updated = try await h.push(Make.note(id, body: "one\ntwo\n", base: 1), token: token)
        #expect(updated.appliedVersion == 2)
        let rows = try await h.drain(token: token).rows
        #expect(rows.count == 1)
        #expect(rows.first?.version == 2)
        #expect(rows.first?.note?.bodyBytes() == Data("one\ntwo\n".utf8))
        #expect(rows.first?.changeId == (try #require(Optional(updated.changeId))))
        await h.close()
    }

    /// A put of exactly what the current version holds (a machine bringing
    /// back notes whose deletion it held) is answered `applied` at that
    /// version and makes none: no machine pulls it, no history shows it.
    @Test(arguments: ContractTarget.all)
    func aPutOfWhatTheCurrentVersionHoldsAppliesWithoutANewVersion(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let folder = FolderID()
        let id = NoteID()
        #expect(try await h.push(Make.folder(folder, name: "Work"), token: token).appliedVersion == 1)
        let created = try await h.push(Make.note(id, body: "one\n", folder: folder), token: token)
        #expect(created.appliedVersion == 2)
        let again = Make.note(id, body: "one\n", folder: folder, base: 2)
        #expect(try await h.push(again, token: token).appliedVersion == 2)
        #expect(try await h.push(again, token: token).appliedVersion == 2, "a retry gets the same answer")
        #expect(try await h.push(Make.folder(folder, name: "Work", base: 1), token: token).appliedVersion == 1)
        var rows = try await h.drain(token: token).rows
        #expect(rows.map(\.version).sorted() == [1, 2])
        #expect(rows.first { $0.version == 2 }?.changeId == created.changeId, "the version keeps the change that made it")
        // Anything different is a new version: the title, the folder, the body.
        #expect(try await h.push(Make.note(id, title: "other.md", body: "one\n", folder: folder, base: 2), token: token)
            .appliedVersion == 3)
        #expect(try await h.push(Make.note(id, title: "other.md", body: "one\n", base: 3), token: token)
            .appliedVersion == 4)
        #expect(try await h.push(Make.note(id, title: "other.md", body: "one\n\n", base: 4), token: token)
            .appliedVersion == 5)
        rows = try await h.drain(token: token).rows
        #expect(rows.map(\.version).sorted() == [1, 5])
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aStaleBaseIsAConflictCarryingTheCurrentRow(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let id = NoteID()
        _ = try await h.push(Make.note(id, body: "a\n"), token: token)
        let second = try await h.push(Make.note(id, body: "b\n", base: 1), token: token)
        let stale = try await h.push(Make.note(id, body: "c\n", base: 1), token: token)
        let current = try #require(stale.conflictCurrent ?? nil)
        #expect(current.version == 2)
        #expect(current.changeId == second.changeId)
        #expect(current.note?.bodyBytes() == Data("b\n".utf8))
        #expect(current.deleted == false)
        // A create of an existing note conflicts too.
        let create = try await h.push(Make.note(id, body: "d\n"), token: token)
        #expect((create.conflictCurrent ?? nil)?.version == 2)
        // A base for a note the server never saw: current is null.
        let unknown = try await h.push(Make.note(NoteID(), base: 7), token: token)
        #expect(unknown.conflictCurrent != nil)
        #expect((unknown.conflictCurrent ?? nil) == nil)
        let rows = try await h.drain(token: token).rows
        #expect(rows.map(\.version) == [2])
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aDeleteLeavesATombstoneThatAnEditRevives(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let id = NoteID()
        _ = try await h.push(Make.note(id), token: token)
        let deleted = try await h.push(.delete(.note(id), baseVersion: 1), token: token)
        #expect(deleted.appliedVersion == 2)
        var rows = try await h.drain(token: token).rows
        #expect(rows.count == 1)
        #expect(rows.first?.deleted == true)
        #expect(rows.first?.note == nil)
        // A create (null base) against the tombstone conflicts, carrying it.
        let create = try await h.push(Make.note(id, body: "back\n"), token: token)
        let tombstone = try #require(create.conflictCurrent ?? nil)
        #expect(tombstone.deleted)
        #expect(tombstone.version == 2)
        // Re-sent on the tombstone's version, the edit revives the note.
        let revived = try await h.push(Make.note(id, body: "back\n", base: 2), token: token)
        #expect(revived.appliedVersion == 3)
        rows = try await h.drain(token: token).rows
        #expect(rows.first?.deleted == false)
        #expect(rows.first?.note?.bodyBytes() == Data("back\n".utf8))
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aRepeatedChangeIdGetsTheIdenticalFirstAnswerAndIsAppliedOnce(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let id = NoteID()
        let create = Make.note(id, body: "x\n")
        let conflicting = Make.note(id, body: "y\n")  // null base: will conflict
        let first = try await h.pushRaw([create], token: token)
        let firstConflict = try await h.pushRaw([conflicting], token: token)
        #expect(first.status == 200)
        #expect(try firstConflict.decode(PushResponse.self).results.first?.status == "conflict")
        // An edit in between changes the current row; the replays must not.
        _ = try await h.push(Make.note(id, body: "z\n", base: 1), token: token)
        let again = try await h.pushRaw([create], token: token)
        #expect(again.status == 200)
        #expect(again.pushResultBytes != nil)
        #expect(again.pushResultBytes == first.pushResultBytes)
        let conflictAgain = try await h.pushRaw([conflicting], token: token)
        #expect(conflictAgain.pushResultBytes == firstConflict.pushResultBytes)
        let rows = try await h.drain(token: token).rows
        #expect(rows.map(\.version) == [2])
        // The same id with another payload is refused with 409 and changes nothing.
        var altered = create
        altered.note?.title = "other.md"
        let reused = try await h.pushRaw([Make.note(NoteID()), altered], token: token)
        #expect(reused.status == 409)
        #expect(reused.errorCode == "change_id_reused")
        #expect(try await h.drain(token: token).rows.count == 1)
        await h.close()
    }

    @Test(arguments: StoreFactory.all)
    func aRepeatedChangeIdGetsItsFirstAnswerAfterARestart(factory: StoreFactory) async throws {
        let h = try Harness(factory)
        let token = try await h.account()
        let change = Make.note(body: "kept\n")
        let first = try await h.pushRaw([change], token: token)
        await h.close(keepData: true)
        let reopened = try Harness(factory, directory: h.directory)
        let again = try await reopened.pushRaw([change], token: token)
        #expect(again.status == 200)
        #expect(again.pushResultBytes != nil)
        #expect(again.pushResultBytes == first.pushResultBytes)
        #expect(try await reopened.drain(token: token).rows.count == 1)
        await reopened.close()
    }

    @Test(arguments: ContractTarget.all)
    func changesInOnePushApplyInOrder(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let folder = FolderID()
        let notes = (0..<5).map { _ in NoteID() }
        let changes = [Make.folder(folder)] + notes.map { Make.note($0, folder: folder) }
        let results = try await h.push(changes, token: token)
        #expect(results.map(\.changeId) == changes.map(\.changeId))
        #expect(results.compactMap(\.appliedVersion) == [1, 2, 3, 4, 5, 6])
        let rows = try await h.drain(token: token).rows
        #expect(rows.map(\.id) == [folder.uuid] + notes.map(\.uuid))
        #expect(rows.dropFirst().allSatisfy { $0.note?.folderId == folder })
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aFolderMoveThatMakesACycleIsRefusedAndMissingFoldersAreAllowed(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let a = FolderID()
        let b = FolderID()
        let c = FolderID()
        _ = try await h.push([Make.folder(a, name: "A"), Make.folder(b, name: "B", parent: a), Make.folder(c, name: "C", parent: b)], token: token)
        let intoGrandchild = try await h.push(Make.folder(a, name: "A", parent: c, base: 1), token: token)
        #expect(intoGrandchild.refusalReason == .folderCycle)
        let intoItself = try await h.push(Make.folder(b, name: "B", parent: b, base: 2), token: token)
        #expect(intoItself.refusalReason == .folderCycle)
        // Within one push: moving B under C after C moved to the root is fine.
        let results = try await h.push([Make.folder(c, name: "C", parent: nil, base: 3), Make.folder(b, name: "B", parent: c, base: 2)], token: token)
        #expect(results.compactMap(\.appliedVersion) == [4, 5])
        // A note may name a folder the server does not have, or a deleted one.
        let orphan = try await h.push(Make.note(folder: FolderID()), token: token)
        #expect(orphan.appliedVersion != nil)
        _ = try await h.push(.delete(.folder(a), baseVersion: 1), token: token)
        let inDeleted = try await h.push(Make.note(folder: a), token: token)
        #expect(inDeleted.appliedVersion != nil)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func anOversizedChangeOnAStaleBaseIsAConflictNotARefusal(target: ContractTarget) async throws {
        var limits = ProtocolLimits()
        limits.noteBytesMax = 1_000
        let h = try target.harness(limits: limits)
        let token = try await h.account()
        let id = NoteID()
        let created = try await h.push([Make.note(id, body: "v1\n")], token: token)
        let version = try #require(created[0].appliedVersion)
        let renamed = try await h.push([Make.note(id, title: "renamed", body: "v1\n", base: version)], token: token)
        #expect(renamed[0].appliedVersion != nil)
        let oversized = try await h.push(
            [Make.note(id, body: String(repeating: "z", count: 1_500), base: version)], token: token)
        #expect(oversized.map(\.status) == ["conflict"], "the client must learn the newer version before any refusal")
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func limitsRefuseOneOversizedChangeAloneAndRejectOversizedPushesWhole(target: ContractTarget) async throws {
        var limits = ProtocolLimits()
        limits.noteBytesMax = 1_000
        limits.pushPayloadBytesMax = 2_000
        limits.pushChangesMax = 5
        limits.nameBytesMax = 50
        let h = try target.harness(limits: limits)
        let token = try await h.account()
        let results = try await h.push(
            [Make.note(body: "small\n"), Make.note(body: String(repeating: "z", count: 1_500)),
             Make.note(title: String(repeating: "t", count: 51)), Make.note(body: "also small\n")], token: token)
        #expect(results.map(\.status) == ["applied", "refused", "refused", "applied"])
        #expect(results[1].refusalReason == .noteTooLarge)
        #expect(results[2].refusalReason == .nameTooLong)
        let tooMany = try await h.pushRaw((0..<6).map { _ in Make.note() }, token: token)
        #expect(tooMany.status == 413)
        #expect(tooMany.errorCode == "too_many_changes")
        let tooLarge = try await h.pushRaw((0..<3).map { _ in Make.note(body: String(repeating: "q", count: 900)) }, token: token)
        #expect(tooLarge.status == 413)
        #expect(tooLarge.errorCode == "push_too_large")
        #expect(try await h.drain(token: token).rows.count == 2)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func twoAccountsNeverSeeEachOthersEntities(target: ContractTarget) async throws {
        let h = try target.harness()
        let alice = try await h.account("alice")
        let bob = try await h.account("bob")
        let shared = NoteID()
        #expect(try await h.push(Make.note(shared, body: "alice secret\n"), token: alice).appliedVersion == 1)
        // The same id in Bob's account is a different entity: a create applies.
        #expect(try await h.push(Make.note(shared, body: "bob text\n"), token: bob).appliedVersion == 1)
        // Bob editing "his" version 1 never touches Alice's note.
        #expect(try await h.push(Make.note(shared, body: "bob again\n", base: 1), token: bob).appliedVersion == 2)
        // Bob's conflicts, feed, index and fetch carry nothing of Alice's.
        let conflict = try await h.pushRaw([Make.note(shared, body: "x\n", base: 1)], token: bob)
        let feed = try await h.changesRaw(token: bob)
        let index = try await h.send("GET", Endpoint.index, token: bob)
        let fetch = try await h.send("POST", Endpoint.fetch, token: bob, body: try WireCoding.encoder().encode(FetchRequest(entities: [.note(shared)])))
        for reply in [conflict, feed, index, fetch] {
            #expect(reply.status == 200)
            #expect(!reply.text.contains("alice"))
        }
        let aliceRows = try await h.drain(token: alice).rows
        #expect(aliceRows.map(\.version) == [1])
        #expect(aliceRows.first?.note?.bodyBytes() == Data("alice secret\n".utf8))
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func missingMalformedUnknownAndRevokedTokensGetA401WithNoData(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account("carol")
        _ = try await h.push(Make.note(body: "carol text\n"), token: token)
        let forged = AccessToken(text: token)
            .map { "nfs_\($0.id)_" + String(repeating: "A", count: 43) } ?? ""
        let unknownID = "nfs_" + String(repeating: "0", count: 24) + "_" + String(repeating: "B", count: 43)
        for candidate in [nil, "", "garbage", "nfs_short_x", forged, unknownID] as [String?] {
            let reply = try await h.send("GET", Endpoint.changes, token: candidate)
            #expect(reply.status == 401, "token \(candidate ?? "none")")
            #expect(!reply.text.contains("carol"))
            #expect(reply.errorCode == "unauthorized")
        }
        try await AccountManager(store: h.store).revoke(name: "carol")
        let revoked = try await h.changesRaw(token: token)
        #expect(revoked.status == 401)
        let push = try await h.pushRaw([Make.note()], token: token)
        #expect(push.status == 401)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func malformedRequestsGetA400AndChangeNothing(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let device = DeviceID().description
        let note = NoteID().description
        let change = ChangeID().description
        let bodies: [String] = [
            "{not json",
            "[]",
            #"{"device":"\#(device)","changes":"many"}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"put","baseVersion":"1","note":{"title":"t","body":"b","folderId":null}}]}"#,
            #"{"device":"\#(device)","changes":[],"extra":1}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"put","baseVersion":null,"note":{"title":"t","body":"b","folderId":null,"colour":"red"}}]}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"not-a-uuid","op":"put","baseVersion":null,"note":{"title":"t","body":"b","folderId":null}}]}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"put","baseVersion":null,"note":{"title":"t","body":"***","bodyEncoding":"base64","folderId":null}}]}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"put","baseVersion":null}]}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"put","baseVersion":0,"note":{"title":"t","body":"b","folderId":null}}]}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"page","id":"\#(note)","op":"put","baseVersion":null,"note":{"title":"t","body":"b","folderId":null}}]}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"delete","baseVersion":null},{"changeId":"\#(change)","kind":"note","id":"\#(NoteID())","op":"delete","baseVersion":null}]}"#,
            #"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"delete","baseVersion":null},{"changeId":"\#(ChangeID())","kind":"note","id":"\#(note)","op":"delete","baseVersion":null}]}"#,
        ]
        for body in bodies {
            let reply = try await h.send("POST", Endpoint.push, token: token, body: Data(body.utf8))
            #expect(reply.status == 400, "\(body)")
            #expect(reply.errorCode == "bad_request")
        }
        // Invalid UTF-8 declared as text.
        var invalid = Data(#"{"device":"\#(device)","changes":[{"changeId":"\#(change)","kind":"note","id":"\#(note)","op":"put","baseVersion":null,"note":{"title":"t","body":""#.utf8)
        invalid.append(contentsOf: [0xFF, 0xFE, 0xC0])
        invalid.append(contentsOf: Array(#"","folderId":null}}]}"#.utf8))
        #expect(try await h.send("POST", Endpoint.push, token: token, body: invalid).status == 400)
        // Bad query parameters and routes.
        #expect(try await h.send("GET", Endpoint.changes, token: token, query: ["limit": "-1"]).status == 400)
        #expect(try await h.send("GET", Endpoint.changes, token: token, query: ["wait": "soon"]).status == 400)
        #expect(try await h.send("GET", Endpoint.changes, token: token, query: ["colour": "red"]).status == 400)
        #expect(try await h.send("GET", Endpoint.index, token: token, query: ["after": "nope"]).status == 400)
        #expect(try await h.send("GET", "/v1/nothing", token: token).status == 404)
        #expect(try await h.send("GET", Endpoint.push, token: token).status == 405)
        #expect(try await h.drain(token: token).rows.isEmpty)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func binaryBodiesTravelAsBase64AndComeBackByteForByte(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let bytes = Data([0x00, 0xFF, 0xFE, 0x41, 0x0A, 0xC3, 0x28])
        let payload = NotePayload(title: "blob.bin", bodyBytes: bytes, folderId: nil)
        #expect(payload.bodyEncoding == .base64)
        _ = try await h.push(.putNote(NoteID(), payload, baseVersion: nil), token: token)
        let text = NotePayload(title: "t.md", bodyBytes: Data("héllo ∕\n".utf8), folderId: nil)
        #expect(text.bodyEncoding == nil)
        _ = try await h.push(.putNote(NoteID(), text, baseVersion: nil), token: token)
        let rows = try await h.drain(token: token).rows
        #expect(rows.map { $0.note?.bodyBytes() } == [bytes, Data("héllo ∕\n".utf8)])
        await h.close()
    }

    /// How fast a poll wakes is a benchmark figure (`scripts/bench-server`,
    /// the long-poll wake row); here, that the change and nothing else wakes it.
    @Test(arguments: ContractTarget.all)
    func healthAndMetricsAnswerWithoutAToken(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        _ = try await h.push([Make.note(), Make.note(base: 3)], token: token)
        let health = try await h.send("GET", Endpoint.healthz, token: nil)
        #expect(health.status == 200)
        let metrics = try await h.send("GET", Endpoint.metrics, token: nil)
        #expect(metrics.status == 200)
        #expect(metrics.text.contains(#"notesfs_push_changes_total{result="applied"} 1"#))
        #expect(metrics.text.contains(#"notesfs_push_changes_total{result="conflict"} 1"#))
        #expect(metrics.text.contains(#"notesfs_http_requests_total{route="push",status="200"} 1"#))
        #expect(metrics.text.contains("notesfs_accounts 1"))
        #expect(metrics.text.contains("notesfs_long_polls_held 0"))
        #expect(metrics.text.contains("notesfs_http_request_duration_seconds_bucket"))
        await h.close()
    }
}
