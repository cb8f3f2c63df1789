import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncProtocol
import Synchronization
import TestSupport
import Testing

/// Loses the reply of the next push after the server applied it.
final class LosesNextPushReply: SyncTransport {
    let inner: any SyncTransport
    let loseNext = Atomic<Bool>(false)

    init(_ inner: any SyncTransport) { self.inner = inner }

    func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
        let response = try await inner.push(request)
        if loseNext.exchange(false, ordering: .relaxed) { throw .offline("reply lost") }
        return response
    }

    func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
        try await inner.changes(since: since, limit: limit, waitSeconds: waitSeconds)
    }

    func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage {
        try await inner.index(after: after, limit: limit)
    }

    func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse {
        try await inner.fetch(request)
    }
}

/// What the long poll may apply by itself (`SyncEngine.applyPolled`).
@Suite struct PolledPageTests {
    /// Found by the simulation's scheduler seeds (seed 107): the page moved the
    /// cursor past another machine's edit, skipped over the in-flight row; the
    /// retry then settled on the server's replay of the older version.
    @Test func aPageIsNotAppliedWhileASentChangeWaitsForItsAnswer() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let a = try world.device("a"), b = try world.device("b")
        let losing = LosesNextPushReply(a.transport)
        let engine = try SyncEngine(replica: a.store.replica, transport: losing)
        let id = try a.store.createNote(in: .root, title: "n.md", body: Data("one\n".utf8))
        #expect(await engine.sync() == .succeeded)
        #expect(await b.engine.sync() == .succeeded)
        let cursor = SyncCursor(rawValue: try #require(try a.store.syncState().cursor))

        // a's edit reaches the server, but a never hears the answer.
        try a.store.replaceBody(of: id, with: Data("one\ntwo from a\n".utf8))
        losing.loseNext.store(true, ordering: .relaxed)
        #expect(await engine.sync().succeeded == false)
        // b edits on top of it.
        #expect(await b.engine.sync() == .succeeded)
        let onB = try #require(try b.store.lookup(in: .root, name: "n.md"))
        guard case .note(let idOnB) = onB.ref else { Issue.record("n.md is not a note on b"); return }
        try b.store.replaceBody(of: idOnB, with: Data("one\ntwo from a\nthree from b\n".utf8))
        #expect(await b.engine.sync() == .succeeded)

        // a's long poll brings b's edit while a's change is still in flight.
        let page = try await a.transport.changes(since: cursor, limit: 200, waitSeconds: 0)
        #expect(!page.changes.isEmpty)
        #expect(await engine.applyPolled(page, since: cursor) == false, "a run must settle the sent change first")
        #expect(await engine.sync() == .succeeded)
        #expect(try a.store.contents(of: .note(id)) == Data("one\ntwo from a\nthree from b\n".utf8))
    }
}
