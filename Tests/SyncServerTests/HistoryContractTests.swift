import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Testing

extension Harness {
    func versionsRaw(token: String?, _ query: [String: String]) async throws -> Reply {
        try await send("GET", Endpoint.historyVersions, token: token, query: query)
    }

    func versions(token: String, of ref: EntityRef, before: Int64? = nil, limit: Int? = nil) async throws
        -> VersionsPage
    {
        var query = [Endpoint.Query.entity: ref.description]
        if let before { query[Endpoint.Query.before] = String(before) }
        if let limit { query[Endpoint.Query.limit] = String(limit) }
        let reply = try await versionsRaw(token: token, query)
        guard reply.status == 200 else { throw HarnessError("versions answered \(reply.status): \(reply.text)") }
        return try reply.decode(VersionsPage.self)
    }

    func version(token: String, of ref: EntityRef, _ version: Int64) async throws -> HistoricEntity? {
        let reply = try await send(
            "GET", Endpoint.historyVersion, token: token,
            query: [Endpoint.Query.entity: ref.description, Endpoint.Query.version: String(version)])
        guard reply.status == 200 else { throw HarnessError("version answered \(reply.status): \(reply.text)") }
        return try reply.decode(VersionResponse.self).entity
    }

    func tree(token: String, at: Date, after: String? = nil, limit: Int? = nil) async throws -> TreePage {
        var query = [Endpoint.Query.at: WireTime.format(at)]
        if let after { query[Endpoint.Query.after] = after }
        if let limit { query[Endpoint.Query.limit] = String(limit) }
        let reply = try await send("GET", Endpoint.historyTree, token: token, query: query)
        guard reply.status == 200 else { throw HarnessError("tree answered \(reply.status): \(reply.text)") }
        return try reply.decode(TreePage.self)
    }

    func treeSummary(token: String, at: Date, after: String? = nil, limit: Int? = nil) async throws
        -> TreeSummaryPage
    {
        var query = [Endpoint.Query.at: WireTime.format(at), Endpoint.Query.bodies: "false"]
        if let after { query[Endpoint.Query.after] = after }
        if let limit { query[Endpoint.Query.limit] = String(limit) }
        let reply = try await send("GET", Endpoint.historyTree, token: token, query: query)
        guard reply.status == 200 else { throw HarnessError("tree answered \(reply.status): \(reply.text)") }
        return try reply.decode(TreeSummaryPage.self)
    }

    /// Every entry of the tree at `at` without text, page by page, with the number of pages.
    func wholeTreeSummary(token: String, at: Date, limit: Int? = nil) async throws
        -> (entries: [TreeSummaryEntry], pages: Int)
    {
        var entries: [TreeSummaryEntry] = []
        var after: String?
        for pages in 1...10_000 {
            let page = try await treeSummary(token: token, at: at, after: after, limit: limit)
            entries += page.entries
            guard page.hasMore else { return (entries, pages) }
            after = page.nextAfter
        }
        throw HarnessError("the tree never ended")
    }

    /// Every entry of the tree at `at`, page by page.
    func wholeTree(token: String, at: Date, limit: Int? = nil) async throws -> [HistoricEntity] {
        var entries: [HistoricEntity] = []
        var after: String?
        for _ in 0..<10_000 {
            let page = try await tree(token: token, at: at, after: after, limit: limit)
            entries += page.entries
            guard page.hasMore else { return entries }
            after = page.nextAfter
        }
        throw HarnessError("the tree never ended")
    }

    /// The server's clock now.
    var now: Date { clock.clock.now() }
}

/// The history routes (docs/server.md "History"), checked against every
/// `ServerStore` and through every transport.
@Suite struct HistoryContractTests {
    @Test(arguments: ContractTarget.all)
    func everyVersionIsKeptWithItsTimeDeviceAndSizeTombstonesIncluded(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let laptop = DeviceID(), phone = DeviceID()
        let id = NoteID()
        let ref = EntityRef.note(id)
        func push(_ change: Change, from device: DeviceID) async throws {
            let reply = try await h.pushRaw([change], token: token, device: device)
            #expect(try reply.decode(PushResponse.self).results.first?.appliedVersion != nil)
        }
        try await push(Make.note(id, title: "plan.md", body: "one\n"), from: laptop)
        let created = h.now
        h.clock.advance(seconds: 60)
        try await push(Make.note(id, title: "plan.md", body: "one\ntwo\n", base: 1), from: phone)
        h.clock.advance(seconds: 60)
        try await push(.delete(ref, baseVersion: 2), from: laptop)
        h.clock.advance(seconds: 60)
        try await push(Make.note(id, title: "plan (back).md", body: "back\n", base: 3), from: phone)

        let page = try await h.versions(token: token, of: ref)
        #expect(page.versions.map(\.version) == [4, 3, 2, 1])
        #expect(page.versions.map(\.deleted) == [false, true, false, false])
        #expect(page.versions.map(\.device) == [phone, laptop, phone, laptop])
        #expect(page.versions.map(\.size) == [5, 0, 8, 4])
        #expect(page.versions.map(\.name) == ["plan (back).md", nil, "plan.md", "plan.md"])
        #expect(!page.hasMore)
        #expect(page.nextBefore == nil)
        #expect(page.keptSince == nil, "a new account's history is whole")
        let times = page.versions.map(\.time)
        #expect(times == times.sorted(by: >))
        #expect(abs(times[3].timeIntervalSince(created)) < 5)

        // Each version's content, the tombstone's none, and one never made.
        #expect(try await h.version(token: token, of: ref, 1)?.note?.bodyBytes() == Data("one\n".utf8))
        #expect(try await h.version(token: token, of: ref, 2)?.note?.bodyBytes() == Data("one\ntwo\n".utf8))
        let tombstone = try #require(try await h.version(token: token, of: ref, 3))
        #expect(tombstone.deleted && tombstone.note == nil && tombstone.device == laptop)
        #expect(try await h.version(token: token, of: ref, 4)?.note?.title == "plan (back).md")
        #expect(try await h.version(token: token, of: ref, 5) == nil)
        #expect(try await h.version(token: token, of: .folder(FolderID(id.uuid)), 1) == nil)

        // Pages, newest first.
        let first = try await h.versions(token: token, of: ref, limit: 3)
        #expect(first.versions.map(\.version) == [4, 3, 2])
        #expect(first.hasMore && first.nextBefore == 2)
        let second = try await h.versions(token: token, of: ref, before: first.nextBefore, limit: 3)
        #expect(second.versions.map(\.version) == [1])
        #expect(!second.hasMore)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func versionsNameEachDeviceByTheNameItToldLastAndPushesWithoutANameStillWork(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let laptop = DeviceID(), phone = DeviceID(), older = DeviceID()
        let id = NoteID()
        let ref = EntityRef.note(id)
        func push(_ change: Change, from device: DeviceID, name: String?, token: String) async throws {
            let reply = try await h.pushRaw([change], token: token, device: device, deviceName: name)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(try reply.decode(PushResponse.self).results.first?.appliedVersion != nil)
        }
        // A name is user text: a right-to-left override travels as it is, for the client to show escaped.
        let phoneName = "phone \u{202E}✓ \\"
        try await push(Make.note(id, body: "one\n"), from: laptop, name: "laptop", token: token)
        try await push(Make.note(id, body: "two\n", base: 1), from: phone, name: phoneName, token: token)
        // A client from before names: no field, and the push works as ever.
        try await push(Make.note(id, body: "three\n", base: 2), from: older, name: nil, token: token)
        var page = try await h.versions(token: token, of: ref)
        #expect(page.versions.map(\.deviceName) == [nil, phoneName, "laptop"])

        // Renamed: every version of the device shows the new name; a push without one keeps it.
        try await push(Make.note(id, body: "four\n", base: 3), from: laptop, name: "work laptop", token: token)
        try await push(Make.note(id, body: "five\n", base: 4), from: laptop, name: nil, token: token)
        // Names belong to an account: the same device id elsewhere names nothing here.
        let otherAccount = try await h.account()
        try await push(Make.note(), from: laptop, name: "someone else's", token: otherAccount)
        page = try await h.versions(token: token, of: ref)
        #expect(page.versions.map(\.device) == [laptop, laptop, older, phone, laptop])
        #expect(page.versions.map(\.deviceName) == ["work laptop", "work laptop", nil, phoneName, "work laptop"])

        // Bounded: 1 to 64 bytes without control characters, else a 400 that applies nothing.
        for name in ["", String(repeating: "é", count: 33), "nul\u{0}", "escape\u{1B}[2J", "line\nbreak"] {
            let reply = try await h.pushRaw([Make.note(id, body: "x\n", base: 5)], token: token, device: phone, deviceName: name)
            #expect(reply.status == 400 && reply.errorCode == "bad_request" && reply.text.contains("deviceName"))
        }
        try await push(
            Make.note(id, body: "six\n", base: 5), from: phone, name: String(repeating: "é", count: 32), token: token)
        page = try await h.versions(token: token, of: ref)
        #expect(page.versions.first?.deviceName == String(repeating: "é", count: 32))
        #expect(page.versions.count == 6)

        // Every changes page says how long the history is kept.
        #expect(try await h.changes(token: token).historySeconds == 30 * 86_400)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func theTreeAtATimeHoldsWhatWasLiveThenAtTheVersionItHadThen(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let work = FolderID(), a = NoteID(), b = NoteID(), c = NoteID()
        let before = h.now
        h.clock.advance(seconds: 60)
        _ = try await h.push(
            [Make.folder(work), Make.note(a, title: "a.md", body: "a1\n", folder: work), Make.note(b, title: "b.md")],
            token: token)
        let first = h.now
        h.clock.advance(seconds: 60)
        _ = try await h.push(
            [
                Make.note(a, title: "a.md", body: "a2\n", folder: work, base: 2), .delete(.note(b), baseVersion: 3),
                Make.note(c, title: "c.md", body: "c1\n"),
            ], token: token)
        let second = h.now
        h.clock.advance(seconds: 60)
        _ = try await h.push(.delete(.folder(work), baseVersion: 1), token: token)

        #expect(try await h.wholeTree(token: token, at: before).isEmpty)
        let then = try await h.wholeTree(token: token, at: first)
        #expect(Set(then.map(\.ref)) == [.folder(work), .note(a), .note(b)])
        let noteA = try #require(then.first { $0.id == a.uuid })
        #expect(noteA.version == 2 && noteA.note?.bodyBytes() == Data("a1\n".utf8) && noteA.note?.folderId == work)
        #expect(then.first { $0.id == work.uuid }?.folder?.name == "Work")
        #expect(then.allSatisfy { !$0.deleted })

        let later = try await h.wholeTree(token: token, at: second)
        #expect(Set(later.map(\.ref)) == [.folder(work), .note(a), .note(c)])
        #expect(later.first { $0.id == a.uuid }?.note?.bodyBytes() == Data("a2\n".utf8))
        #expect(later.first { $0.id == a.uuid }?.version == 4)
        let now = try await h.wholeTree(token: token, at: h.now)
        #expect(Set(now.map(\.ref)) == [.note(a), .note(c)])

        // Page by page, one entity at a time, the same tree in (kind, id) order.
        #expect(try await h.wholeTree(token: token, at: first, limit: 1) == then)
        #expect(then.map(\.ref) == then.map(\.ref).sorted())
        let page = try await h.tree(token: token, at: first, limit: 1)
        #expect(page.entries.count == 1 && page.hasMore && page.nextAfter == page.entries.first?.ref.description)
        #expect(page.keptSince == nil)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func theTreeWithoutTextListsTheSameEntriesWithEachBodysExactByteSize(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let laptop = DeviceID()
        let work = FolderID(), plain = NoteID(), accented = NoteID(), binary = NoteID(), empty = NoteID()
        let binaryBytes = Data([0xFF, 0x00, 0x41, 0xC3])
        _ = try await h.pushRaw(
            [
                Make.folder(work, name: "Wörk"), Make.note(plain, title: "plain.md", body: "one\n", folder: work),
                Make.note(accented, title: "é😀.md", body: "é😀\n"),
                .putNote(binary, NotePayload(title: "bytes.bin", bodyBytes: binaryBytes, folderId: work), baseVersion: nil),
                Make.note(empty, title: "empty.md", body: ""),
            ], token: token, device: laptop)
        let then = h.now
        h.clock.advance(seconds: 60)
        _ = try await h.push(Make.note(accented, title: "é😀.md", body: "later, longer\n", base: 3), token: token)

        let full = try await h.wholeTree(token: token, at: then)
        let (summary, _) = try await h.wholeTreeSummary(token: token, at: then)
        #expect(summary.map(\.ref) == full.map(\.ref))
        #expect(summary.map(\.version) == full.map(\.version))
        #expect(summary.map(\.changeId) == full.map(\.changeId))
        #expect(summary.map(\.time) == full.map(\.time))
        #expect(summary.map(\.device) == full.map(\.device))
        #expect(summary.map(\.name) == full.map { $0.note?.title ?? $0.folder?.name ?? "" })
        #expect(summary.map(\.parentId) == full.map { $0.note?.folderId?.uuid ?? $0.folder?.parentId?.uuid })
        #expect(summary.map(\.size) == full.map { Int64($0.note?.bodyBytes()?.count ?? 0) })
        let sizes = Dictionary(uniqueKeysWithValues: summary.map { ($0.id, $0.size) })
        #expect(sizes[accented.uuid] == 7 && sizes[binary.uuid] == 4 && sizes[empty.uuid] == 0 && sizes[work.uuid] == 0)
        #expect(summary.allSatisfy { $0.device == laptop })
        #expect(try await h.wholeTreeSummary(token: token, at: then, limit: 1).entries == summary)
        #expect(try await h.wholeTreeSummary(token: token, at: h.now).entries.first { $0.id == accented.uuid }?.size == 14)

        // Without text a page holds as many entries as an index page, not 200.
        for batch in 0..<3 {
            _ = try await h.push((0..<100).map { Make.note(title: "n\(batch)-\($0).md") }, token: token)
        }
        let (all, pages) = try await h.wholeTreeSummary(token: token, at: h.now)
        #expect(all.count == 305 && pages == 1)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aTreePageIsBoundedByBytesButHoldsAtLeastOneEntry(target: ContractTarget) async throws {
        var limits = ProtocolLimits()
        limits.pageBytesMax = 10_000
        let h = try target.harness(limits: limits)
        let token = try await h.account()
        let big = String(repeating: "x", count: 6_000)
        _ = try await h.push((0..<3).map { _ in Make.note(body: big) }, token: token)
        _ = try await h.push(Make.note(body: String(repeating: "y", count: 30_000)), token: token)
        var sizes: [Int] = []
        var after: String?
        while true {
            let page = try await h.tree(token: token, at: h.now, after: after)
            sizes.append(page.entries.count)
            after = page.nextAfter
            if !page.hasMore { break }
        }
        #expect(sizes == [1, 1, 1, 1])
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func anotherAccountSeesNothingAndARevokedTokenGets401(target: ContractTarget) async throws {
        let h = try target.harness()
        let owner = try await h.account("owner")
        let other = try await h.account("other")
        let id = NoteID()
        _ = try await h.push(Make.note(id, body: "private\n"), token: owner)
        _ = try await h.push(Make.note(id, body: "private, edited\n", base: 1), token: owner)
        #expect(try await h.versions(token: other, of: .note(id)).versions.isEmpty)
        #expect(try await h.version(token: other, of: .note(id), 1) == nil)
        #expect(try await h.wholeTree(token: other, at: h.now).isEmpty)
        #expect(try await h.versions(token: owner, of: .note(id)).versions.count == 2)

        try await AccountManager(store: h.store).revoke(name: "owner")
        let query = [Endpoint.Query.entity: EntityRef.note(id).description]
        let versions = try await h.versionsRaw(token: owner, query)
        #expect(versions.status == 401 && !versions.text.contains("private"))
        let one = try await h.send(
            "GET", Endpoint.historyVersion, token: owner, query: query.merging([Endpoint.Query.version: "1"]) { $1 })
        #expect(one.status == 401 && !one.text.contains("private"))
        let tree = try await h.send(
            "GET", Endpoint.historyTree, token: owner, query: [Endpoint.Query.at: WireTime.format(h.now)])
        #expect(tree.status == 401 && !tree.text.contains("private"))
        await h.close()
    }

    @Test(arguments: [
        (Endpoint.historyVersions, [String: String]()),
        (Endpoint.historyVersions, ["entity": "note:nope"]),
        (Endpoint.historyVersions, ["entity": "note:\(UUIDText.format(UUID()))", "before": "0"]),
        (Endpoint.historyVersions, ["entity": "note:\(UUIDText.format(UUID()))", "limit": "0"]),
        (Endpoint.historyVersions, ["entity": "note:\(UUIDText.format(UUID()))", "since": "1"]),
        (Endpoint.historyVersion, ["entity": "folder:\(UUIDText.format(UUID()))"]),
        (Endpoint.historyVersion, ["entity": "folder:\(UUIDText.format(UUID()))", "version": "x"]),
        (Endpoint.historyTree, [String: String]()),
        (Endpoint.historyTree, ["at": "yesterday"]),
        (Endpoint.historyTree, ["at": "2025-01-05T14:03:22Z", "after": "note:1"]),
        (Endpoint.historyTree, ["at": "2025-01-05T14:03:22Z", "limit": "-1"]),
        (Endpoint.historyTree, ["at": "2025-01-05T14:03:22Z", "bodies": "no"]),
    ])
    func malformedHistoryRequestsAre400(path: String, query: [String: String]) async throws {
        let h = try Harness(.sqlite)
        let token = try await h.account()
        let reply = try await h.send("GET", path, token: token, query: query)
        #expect(reply.status == 400, "\(path) \(query): \(reply.text)")
        #expect(reply.errorCode == "bad_request")
        await h.close()
    }

    @Test func timesTravelAsRFC3339WithMillisecondsAndAnyOffsetIsRead() throws {
        let date = Date(timeIntervalSince1970: 1_736_085_802.123)
        #expect(WireTime.format(date) == "2025-01-05T14:03:22.123Z")
        #expect(WireTime.parse("2025-01-05T14:03:22.123Z") == date)
        #expect(WireTime.parse("2025-01-05T14:03:22Z") == Date(timeIntervalSince1970: 1_736_085_802))
        #expect(WireTime.parse("2025-01-05T15:03:22+01:00") == Date(timeIntervalSince1970: 1_736_085_802))
        #expect(WireTime.parse("2025-01-05") == nil)
        #expect(WireTime.parse("") == nil)
    }
}
