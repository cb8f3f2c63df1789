import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// The feed's promises: pages, cursors,
/// the index and long polls, checked against every `ServerStore` and
/// through every transport.
@Suite struct FeedContractTests {
    @Test(arguments: ContractTarget.all)
    func pagesHonourTheLimitAndSayWhetherMoreFollow(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let ids = (0..<7).map { _ in NoteID() }
        _ = try await h.push(ids.map { Make.note($0) }, token: token)
        let first = try await h.changes(token: token, limit: 3)
        #expect(first.changes.map(\.version) == [1, 2, 3])
        #expect(first.hasMore)
        let second = try await h.changes(token: token, since: first.nextCursor, limit: 3)
        #expect(second.changes.map(\.version) == [4, 5, 6])
        #expect(second.hasMore)
        let third = try await h.changes(token: token, since: second.nextCursor, limit: 3)
        #expect(third.changes.map(\.version) == [7])
        #expect(!third.hasMore)
        let empty = try await h.changes(token: token, since: third.nextCursor)
        #expect(empty.changes.isEmpty)
        #expect(!empty.hasMore)
        #expect(empty.nextCursor == third.nextCursor)
        // An entity changed again shows once, at its latest version.
        _ = try await h.push(Make.note(ids[0], body: "again\n", base: 1), token: token)
        let all = try await h.drain(token: token).rows
        #expect(all.map(\.version) == [2, 3, 4, 5, 6, 7, 8])
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func pagesAreBoundedByBytesButHoldAtLeastOneRow(target: ContractTarget) async throws {
        var limits = ProtocolLimits()
        limits.pageBytesMax = 10_000
        let h = try target.harness(limits: limits)
        let token = try await h.account()
        let big = String(repeating: "x", count: 6_000)
        _ = try await h.push((0..<3).map { _ in Make.note(body: big) }, token: token)
        _ = try await h.push(Make.note(body: String(repeating: "y", count: 30_000)), token: token)
        var sizes: [Int] = []
        var cursor: SyncCursor?
        while true {
            let page = try await h.changes(token: token, since: cursor)
            sizes.append(page.changes.count)
            cursor = page.nextCursor
            if !page.hasMore { break }
        }
        #expect(sizes == [1, 1, 1, 1])
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func staleForeignAndFutureCursorsAreGone(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let id = NoteID()
        _ = try await h.push(Make.note(id), token: token)
        let page = try await h.changes(token: token)
        let epoch = page.epoch
        // Another epoch.
        let foreign = try await h.changesRaw(token: token, since: SyncCursor(epoch: "0123abcd", counter: 1))
        #expect(foreign.status == 410)
        #expect(foreign.errorCode == "cursor_gone")
        // Ahead of the counter.
        let future = try await h.changesRaw(token: token, since: SyncCursor(epoch: epoch, counter: 99))
        #expect(future.status == 410)
        // Not a cursor at all.
        let malformed = try await h.changesRaw(token: token, since: SyncCursor(rawValue: "garbage"))
        #expect(malformed.status == 400)
        // Older than retention: the tombstone at version 2 is purged.
        _ = try await h.push(.delete(.note(id), baseVersion: 1), token: token)
        h.clock.advance(seconds: 2 * 86_400)
        let report = try await h.server.purgeExpired()
        #expect(report.tombstones == 1)
        let expired = try await h.changesRaw(token: token, since: SyncCursor(epoch: epoch, counter: 1))
        #expect(expired.status == 410)
        // A cursor at or past the purged tombstone, and no cursor, still work.
        #expect(try await h.changesRaw(token: token, since: SyncCursor(epoch: epoch, counter: 2)).status == 200)
        #expect(try await h.changes(token: token).changes.isEmpty)
        // A new epoch (restored server) makes every cursor gone.
        _ = try await h.store.newEpoch(now: Date())
        let restored = try await h.changesRaw(token: token, since: SyncCursor(epoch: epoch, counter: 2))
        #expect(restored.status == 410)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aPushWithACursorFromAnotherEpochIsGoneAndANewEpochNeverReissuesAVersion(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let id = NoteID()
        let first = try await h.pushRaw([Make.note(id, body: "one\n")], token: token)
        #expect(first.status == 200)
        let epoch = try await h.changes(token: token).epoch
        let start = try first.decode(PushResponse.self).startCursor
        #expect(start == SyncCursor(epoch: epoch, counter: 0))
        // Nothing but this push since the client's position (none: 0), so it may skip pulling it back.
        #expect(try first.decode(PushResponse.self).nextCursor == SyncCursor(epoch: epoch, counter: 1))
        // A cursor of this epoch, even an old one, does not stop a push; an old
        // one gets no cursor past the push (version 1 is not its own).
        let same = try await h.pushRaw([Make.note(id, body: "two\n", base: 1)], token: token, cursor: start)
        #expect(try same.decode(PushResponse.self).results.first?.outcome == .applied(version: 2))
        #expect(try same.decode(PushResponse.self).nextCursor == nil)
        let current = try await h.pushRaw(
            [Make.note(NoteID())], token: token, cursor: SyncCursor(epoch: epoch, counter: 2))
        #expect(try current.decode(PushResponse.self).nextCursor == SyncCursor(epoch: epoch, counter: 3))

        let restoredAt = Date()
        _ = try await h.store.newEpoch(now: restoredAt)
        let stale = try await h.pushRaw([Make.note(id, body: "three\n", base: 2)], token: token, cursor: start)
        #expect(stale.status == 410)
        #expect(try stale.decode(ErrorBody.self).error.code == .cursorGone)
        #expect(try await h.index(token: token).entries.map(\.version).max() == 3, "a 410 push applied nothing")
        // Without a cursor (or with the new epoch's) the push is taken, at a
        // version past both the old counter and the wall clock of the restore.
        let newStart = try await h.pushRaw([Make.note(NoteID())], token: token)
        let fresh = try newStart.decode(PushResponse.self)
        #expect(fresh.startCursor != start)
        guard case .applied(let version) = fresh.results.first?.outcome else {
            Issue.record("not applied: \(fresh.results)")
            return
        }
        #expect(version > ServerEpoch.clockFloor(now: restoredAt))
        #expect(version > 3 + ServerEpoch.minimumGap)
        let again = try await h.pushRaw([Make.note(id, body: "three\n", base: 2)], token: token, cursor: fresh.startCursor)
        #expect(try again.decode(PushResponse.self).results.first?.status == "applied")
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func theIndexListsLiveEntitiesMatchingTheFeed(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let folder = FolderID()
        let notes = (0..<5).map { _ in NoteID() }
        _ = try await h.push([Make.folder(folder)] + notes.map { Make.note($0, folder: folder) }, token: token)
        _ = try await h.push(.delete(.note(notes[0]), baseVersion: 2), token: token)
        _ = try await h.push(Make.note(notes[1], body: "edited\n", base: 3), token: token)
        var entries: [IndexEntry] = []
        var after: String?
        let firstPage = try await h.index(token: token, limit: 2)
        entries += firstPage.entries
        after = firstPage.nextAfter
        while let next = after {
            let page = try await h.index(token: token, after: next, limit: 2)
            entries += page.entries
            after = page.nextAfter
        }
        let feed = try await h.drain(token: token).rows.filter { !$0.deleted }
        let fromFeed = Dictionary(uniqueKeysWithValues: feed.map { ($0.ref, $0.version) })
        let fromIndex = Dictionary(uniqueKeysWithValues: entries.map { ($0.ref, $0.version) })
        #expect(fromIndex == fromFeed)
        #expect(entries.count == 5)
        #expect(entries.map(\.ref) == entries.map(\.ref).sorted())
        #expect(firstPage.cursor.rawValue.hasSuffix(".8"))
        // Fetch returns the rows, tombstones too, and names unknown ones.
        let unknown = EntityRef.note(NoteID())
        let body = try WireCoding.encoder().encode(FetchRequest(entities: [.note(notes[0]), .note(notes[1]), unknown]))
        let reply = try await h.send("POST", Endpoint.fetch, token: token, body: body)
        #expect(reply.status == 200)
        let fetched = try reply.decode(FetchResponse.self)
        #expect(fetched.entities.map(\.version) == [7, 8])
        #expect(fetched.entities.first?.deleted == true)
        #expect(fetched.notFound == [unknown])
        #expect(fetched.omitted.isEmpty)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aLongPollWakesForAChangeInItsAccountAndNotForAnother(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let other = try await h.account()
        let start = try await h.changes(token: token)
        let parkedBefore = h.server.notifier.waitingCount
        // The longest wait the server allows: an empty page would mean no change woke it.
        async let polled = h.changes(token: token, since: start.nextCursor, wait: 30)
        #expect(try await waitUntil { h.server.notifier.waitingCount > parkedBefore })
        // A change in another account does not wake it: woken, it would answer an empty page.
        _ = try await h.push(Make.note(), token: other)
        _ = try await h.push(Make.note(body: "wake\n"), token: token)
        let page = try await polled
        #expect(page.changes.map { $0.note?.bodyBytes() } == [Data("wake\n".utf8)])
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aLongPollNamingItsDeviceSleepsThroughThatDevicesOwnPushAndWakesForAnother(target: ContractTarget)
        async throws
    {
        let h = try target.harness()
        let token = try await h.account()
        let start = try await h.changes(token: token)
        let parkedBefore = h.server.notifier.waitingCount
        async let polled = h.changes(token: token, since: start.nextCursor, wait: 30, device: h.device)
        async let unnamed = h.changes(token: token, since: start.nextCursor, wait: 30)
        #expect(try await waitUntil { h.server.notifier.waitingCount >= parkedBefore + 2 })
        // The device's own push from where its cursor stands: the reply moves that cursor on.
        let own = try await h.pushRaw([Make.note(body: "mine\n")], token: token, cursor: start.nextCursor)
        let ownCursor = try #require(try own.decode(PushResponse.self).nextCursor)
        // A poll that names no device wakes for it, as before.
        #expect(try await unnamed.changes.map { $0.note?.bodyBytes() } == [Data("mine\n".utf8)])
        // The named poll slept through its own device's push: woken, it would have answered "mine".
        _ = try await h.pushRaw([Make.note(body: "theirs\n")], token: token, device: DeviceID())
        let page = try await polled
        #expect(page.changes.map { $0.note?.bodyBytes() } == [Data("theirs\n".utf8)])
        #expect(page.from == ownCursor)
        // Polled again from the old cursor (a reply it never heard), the
        // device gets everything after the skip at once, never a gap.
        let again = try await h.changes(token: token, since: start.nextCursor, wait: 30, device: h.device)
        #expect(again.from == ownCursor)
        #expect(again.changes.map { $0.note?.bodyBytes() } == [Data("theirs\n".utf8)])
        #expect(try await h.changes(token: token, since: start.nextCursor).changes.count == 2)
        await h.close()
    }

    @Test(arguments: ContractTarget.all)
    func aLongPollTimesOutWithAnEmptyPage(target: ContractTarget) async throws {
        let h = try target.harness()
        let token = try await h.account()
        let start = try await h.changes(token: token)
        let began = ContinuousClock.now
        let page = try await h.changes(token: token, since: start.nextCursor, wait: 1)
        let waited = ContinuousClock.now - began
        #expect(page.changes.isEmpty)
        #expect(page.nextCursor == start.nextCursor)
        // Never early; late only by a generous ceiling (a busy machine is slow, not wrong).
        #expect(waited >= .milliseconds(950) && waited < .seconds(30), "waited \(waited)")
        await h.close()
    }
}
