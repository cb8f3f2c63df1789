import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// The client's side of the server's history (`HistoryTransport`) against
/// the real server on loopback, with notes made and synced by real engines.
@Suite(.serialized) struct HistoryClientTests {
    typealias LiveServer = HTTPTransportTests.LiveServer

    @Test func versionsOneVersionAndThePastTreeComeBackThroughTheHTTPClient() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let laptop = try server.device("laptop"), phone = try server.device("phone")
        let id = try laptop.store.createNote(in: .root, title: "plan.md", body: Data("one\n".utf8))
        #expect(await laptop.engine.sync() == .succeeded)
        #expect(await phone.engine.sync() == .succeeded)
        let created = Date()
        // The next version must get a later server millisecond than `created`.
        try await Task.sleep(for: .milliseconds(20))
        try phone.store.replaceBody(of: id, with: Data("one\ntwo\n".utf8))
        #expect(await phone.engine.sync() == .succeeded)
        #expect(await laptop.engine.sync() == .succeeded)
        try laptop.store.removeFile(in: .root, name: "plan.md")
        #expect(await laptop.engine.sync() == .succeeded)

        let client = laptop.transport
        let listing = try await client.allVersions(of: .note(id))
        #expect(listing.items.map(\.version) == [3, 2, 1])
        #expect(listing.items.map(\.deleted) == [true, false, false])
        #expect(listing.items.map(\.size) == [0, 8, 4])
        #expect(listing.items.map(\.device) == [try laptop.store.device().id, try phone.store.device().id, try laptop.store.device().id])
        #expect(listing.keptSince == nil)
        let firstPage = try await client.versions(of: .note(id), before: nil, limit: 2)
        #expect(firstPage.versions.map(\.version) == [3, 2] && firstPage.hasMore && firstPage.nextBefore == 2)

        // The deleted note's last text, and nothing for a version never made.
        let last = try #require(try await client.version(of: .note(id), version: 2))
        #expect(last.note?.bodyBytes() == Data("one\ntwo\n".utf8))
        #expect(last.note?.title == "plan.md")
        #expect(try await client.version(of: .note(id), version: 9) == nil)

        // The tree when the note was new, and now that it is gone.
        let then = try await client.wholeTree(at: created)
        #expect(then.items.map(\.id) == [id.uuid])
        #expect(then.items.first?.note?.bodyBytes() == Data("one\n".utf8))
        #expect(try await client.wholeTree(at: Date()).items.isEmpty)
        #expect(try await client.wholeTree(at: created.addingTimeInterval(-3_600)).items.isEmpty)
    }

    @Test func aMomentsTreeComesWithoutTextAndEachTextIsFetchedByItsVersion() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let laptop = try server.device("laptop")
        let work = try laptop.store.makeFolders(path: ["Work"])
        let plan = try laptop.store.createNote(in: work, title: "plan.md", body: Data("één\n".utf8))
        let todo = try laptop.store.createNote(in: .root, title: "todo.md", body: Data("milk\n".utf8))
        #expect(await laptop.engine.sync() == .succeeded)
        try await Task.sleep(for: .milliseconds(20))
        let then = Date()
        try await Task.sleep(for: .milliseconds(20))
        try laptop.store.replaceBody(of: plan, with: Data("rewritten later\n".utf8))
        #expect(await laptop.engine.sync() == .succeeded)

        let client = laptop.transport
        let (items, keptSince) = try await client.momentItems(at: then)
        #expect(keptSince == nil)
        let byID = Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0) })
        guard case .folder(let workID) = work else {
            Issue.record("Work is not a folder: \(work)")
            return
        }
        #expect(byID[workID.uuid]?.kind == .folder && byID[workID.uuid]?.body == nil)
        let planItem = try #require(byID[plan.uuid])
        #expect(planItem.name == "plan.md" && planItem.parentID == workID.uuid && planItem.size == 6)
        guard case .server(let version)? = planItem.body else {
            Issue.record("plan.md came with its text: \(String(describing: planItem.body))")
            return
        }
        let text = try await client.momentText(of: plan, version: version)
        #expect(text == Data("één\n".utf8))
        #expect(byID[todo.uuid]?.size == 5)
        let never = try await client.momentText(of: plan, version: 99)
        #expect(never == nil, "a version never made")

        var texts: [NoteID: Data] = [:]
        try await client.forEachMomentText(at: then) { page in
            for text in page { texts[text.id] = text.text }
        }
        #expect(texts == [plan: Data("één\n".utf8), todo: Data("milk\n".utf8)])
    }

    /// A server from before tree pages without text answers 400 to `bodies`.
    struct ServerBeforeSummaries: HistoryTransport {
        let page: TreePage
        func versions(of ref: EntityRef, before: Int64?, limit: Int) async throws(TransportError) -> VersionsPage {
            VersionsPage(versions: [], hasMore: false, nextBefore: nil, keptSince: nil, account: nil)
        }
        func version(of ref: EntityRef, version: Int64) async throws(TransportError) -> HistoricEntity? { nil }
        func tree(at: Date, after: String?, limit: Int) async throws(TransportError) -> TreePage { page }
        func treeSummary(at: Date, after: String?, limit: Int) async throws(TransportError) -> TreeSummaryPage {
            throw .rejected(status: 400, code: "bad_request", message: "unknown query parameter 'bodies'")
        }
    }

    @Test func aServerFromBeforeTreesWithoutTextGivesTheMomentWithItsText() async throws {
        let id = NoteID()
        let entity = HistoricEntity(
            kind: .note, id: id.uuid, version: 3, changeId: ChangeID(), time: Date(), device: nil, deleted: false,
            note: NotePayload(title: "old.md", bodyBytes: Data("kept\n".utf8), folderId: nil))
        let old = ServerBeforeSummaries(
            page: TreePage(at: Date(), entries: [entity], hasMore: false, nextAfter: nil, keptSince: nil, account: nil))
        let (items, _) = try await old.momentItems(at: Date())
        #expect(items.map(\.body) == [.text(Data("kept\n".utf8))])
        #expect(items.map(\.size) == [5])
    }

    @Test func aNoteMadeAndDeletedElsewhereBeforeThisMachineSawItIsInItsTrashAndComesBackEverywhere() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let laptop = try server.device("laptop"), phone = try server.device("phone")
        let work = try laptop.store.makeFolders(path: ["Work"])
        let id = try laptop.store.createNote(in: work, title: "plan.md", body: Data("one\n".utf8))
        #expect(await laptop.engine.sync() == .succeeded)
        try laptop.store.replaceBody(of: id, with: Data("one\ntwo\n".utf8))
        #expect(await laptop.engine.sync() == .succeeded)
        try laptop.store.removeFile(in: work, name: "plan.md")
        #expect(await laptop.engine.sync() == .succeeded)

        // The phone's first sync brings only the folder and the tombstone.
        #expect(await phone.engine.sync() == .succeeded)
        let entries = try phone.store.trashEntries()
        #expect(entries.map(\.path) == ["Work/plan.md"])
        let entry = try #require(entries.first)
        #expect(entry.noteID == id && entry.origin == .deletedElsewhere)
        #expect(try phone.store.trashBody(entry.seq) == Data("one\ntwo\n".utf8), "its last text, from the history")

        try phone.store.restoreFromTrash(entry.seq)
        #expect(await phone.engine.sync() == .succeeded)
        #expect(await laptop.engine.sync() == .succeeded)
        #expect(try laptop.store.noteID(atPath: "Work/plan.md") == id, "the same note, back on the machine that deleted it")
        let back = try #require(try laptop.store.lookup(in: work, name: "plan.md"))
        #expect(try laptop.store.contents(of: back.ref) == Data("one\ntwo\n".utf8))
        #expect(try phone.store.trashEntries().isEmpty && laptop.store.trashEntries().isEmpty)
    }

    @Test func aRevokedTokenIsTurnedAwayAndAnotherAccountSeesNothing() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let laptop = try server.device("laptop")
        let id = try laptop.store.createNote(in: .root, title: "secret.md", body: Data("secret\n".utf8))
        #expect(await laptop.engine.sync() == .succeeded)
        let otherToken = try await AccountManager(store: server.world.serverStore).add(name: "bob").token.text
        let other = HTTPSyncTransport(baseURL: server.url, token: otherToken)
        #expect(try await other.allVersions(of: .note(id)).items.isEmpty)
        #expect(try await other.version(of: .note(id), version: 1) == nil)
        #expect(try await other.wholeTree(at: Date()).items.isEmpty)

        try await AccountManager(store: server.world.serverStore).revoke(name: "alice")
        do {
            _ = try await laptop.transport.allVersions(of: .note(id))
            Issue.record("a revoked token read the history")
        } catch {
            var unauthorized = false
            if case .unauthorized = error { unauthorized = true }
            #expect(unauthorized, "\(error)")
        }
    }
}
