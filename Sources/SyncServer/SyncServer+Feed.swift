import Foundation
import NotesModel
import SyncProtocol

extension SyncServer {
    /// `GET /v1/changes`: a page of the feed after the cursor, or, with
    /// `wait`, a long poll that parks until there is one.
    ///
    /// A poll standing at the account's head as `heads` knows it for certain
    /// reads nothing: the page is empty and its cursor is the one sent, which
    /// passes no change. (No cursor check can fail there: the retention mark
    /// never passes the counter.)
    func changes(_ request: ServerRequest, account: AccountID) async throws -> ServerResponse {
        let limit = min(try integer(request, Endpoint.Query.limit) ?? limits.pageRowsMax, limits.pageRowsMax)
        let wait = min(try integer(request, Endpoint.Query.wait) ?? 0, limits.waitSecondsMax)
        guard limit >= 1 else { throw ServerError.badRequest("limit must be at least 1") }
        let epoch = try await store.epoch()
        var after: Int64 = 0
        if let since = request.query[Endpoint.Query.since] {
            let cursor = SyncCursor(rawValue: since)
            guard let cursorEpoch = cursor.epoch, let counter = cursor.counter else {
                throw ServerError.badRequest("since is not a cursor this server made")
            }
            guard cursorEpoch == epoch else {
                throw ServerError.cursorGone("the cursor is from another server epoch (a restored or replaced server)")
            }
            after = counter
        }
        let requestedAfter = after
        var read: FeedRead
        if heads.known(account, epoch: epoch) == after {
            read = Self.nothingAfter(after)
        } else {
            read = try await feed(account: account, epoch: epoch, after: after, limit: limit)
            if after > read.head.counter {
                throw ServerError.cursorGone("the cursor is ahead of this server's counter")
            }
            // No cursor means a fresh start, which misses nothing retention removed.
            if request.query[Endpoint.Query.since] != nil && after < read.head.purgedThrough {
                throw ServerError.cursorGone("the cursor is older than tombstone retention")
            }
        }
        let device = try request.query[Endpoint.Query.device].map { text throws(ServerError) in
            guard let device = DeviceID(text) else { throw ServerError.badRequest("device is not a device id") }
            return device
        }
        var waited = false
        if wait > 0 {
            (read, after, waited) = try await waitForChanges(
                request, account: account, device: device, epoch: epoch, after: after, read: read, limit: limit,
                seconds: Double(wait))
        }
        let next =
            read.hasMore ? (read.entities.last?.version ?? after) : max(after, read.head.counter)
        let page = ChangesPage(
            changes: read.entities.map(\.wire), nextCursor: SyncCursor(epoch: epoch, counter: next),
            hasMore: read.hasMore, epoch: epoch,
            from: after == requestedAfter ? nil : SyncCursor(epoch: epoch, counter: after),
            account: try await accountKey(account), historySeconds: Int64(configuration.historyRetentionSeconds))
        var response = ServerResponse(status: 200, contentType: "application/json", body: page.wireJSON)
        response.logNote = "account=\(account) rows=\(read.entities.count)\(waited ? " waited" : "")"
        return response
    }

    /// Holds a long poll until the feed has something after `after` that the
    /// polling device does not already have, or `seconds` pass. Returns the
    /// read, where it starts (moved past the device's own pushes), and whether
    /// the poll parked. Each wake-up re-checks the token first, so a poll whose
    /// token was revoked while it waited ends with 401 and sees nothing newer.
    ///
    /// With the head known (`heads`), an idle poll reads nothing at all: it
    /// parks on the memory's word, and when its wait runs out without a
    /// wake-up and the head is still known, it ends empty without a read or
    /// a token check (a revocation wakes the poll, which then checks).
    private func waitForChanges(
        _ request: ServerRequest, account: AccountID, device: DeviceID?, epoch: String, after start: Int64,
        read first: FeedRead, limit: Int, seconds: Double
    ) async throws -> (FeedRead, after: Int64, waited: Bool) {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1_000))
        var after = start
        var read = first
        var waited = false
        // Each round moves `after` forward or waits; the bound is a backstop.
        for _ in 0..<Self.longPollRoundsMax {
            if let device, !read.entities.isEmpty,
                let own = ownChanges.skip(
                    account: account, device: device, epoch: epoch, after: after, head: read.head.counter)
            {
                after = own
                read = try await feed(account: account, epoch: epoch, after: after, limit: limit)
                continue
            }
            let remaining = deadline - ContinuousClock.now
            guard read.entities.isEmpty, remaining > .zero else { break }
            // Arm before looking again: a commit after this fires the ticket.
            let ticket = notifier.arm(account)
            if heads.known(account, epoch: epoch) != after {
                do {
                    read = try await feed(account: account, epoch: epoch, after: after, limit: limit)
                } catch {
                    notifier.disarm(ticket)
                    throw error
                }
                guard read.entities.isEmpty else {
                    notifier.disarm(ticket)
                    continue
                }
            }
            waited = true
            let parts = remaining.components
            let woken = await notifier.wait(ticket, seconds: Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
            if !woken && heads.known(account, epoch: epoch) == after {
                // Nothing was committed to the account since the ticket was
                // armed, and the head is still known: a read would find nothing.
                read = Self.nothingAfter(after)
                break
            }
            guard try await authenticate(request) == account else { throw ServerError.unauthorized }
            read = try await feed(account: account, epoch: epoch, after: after, limit: limit)
            // Shutting down: answer with what there is.
            if notifier.isClosed { break }
        }
        return (read, after, waited)
    }

    /// Rounds of one long poll (each waits or moves past the device's own changes).
    static let longPollRoundsMax = 64

    /// Reads the feed after `after` and keeps the head it saw, unless a
    /// commit was reported meanwhile.
    func feed(account: AccountID, epoch: String, after: Int64, limit: Int) async throws -> FeedRead {
        let stamp = heads.begin(account)
        let read = try await store.changes(account: account, after: after, rowsMax: limit, bytesMax: limits.pageBytesMax)
        heads.record(stamp, counter: read.head.counter, epoch: epoch)
        return read
    }

    /// The read at a known head: nothing after it.
    static func nothingAfter(_ head: Int64) -> FeedRead {
        FeedRead(entities: [], hasMore: false, head: FeedHead(counter: head, purgedThrough: 0))
    }
}
