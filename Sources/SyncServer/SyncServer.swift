import Foundation
import NotesModel
import SyncProtocol

/// The sync server's request handling, independent of any HTTP library:
/// routing, authentication, the push rules, the feed with long polls, the
/// index, fetch, health and metrics. The HTTP layer turns requests into
/// `ServerRequest`s and sends back the `ServerResponse`s.
public final class SyncServer: Sendable {
    /// What an operator may tune.
    public struct Configuration: Sendable {
        public var limits: ProtocolLimits
        /// How long tombstones and answered change ids are kept.
        public var tombstoneRetentionSeconds: Double
        /// How long replaced versions are kept (`notesfs serve --history-days`).
        public var historyRetentionSeconds: Double
        /// How much replaced text each account's history may hold.
        public var historyBudget: HistoryBudget
        /// How long a head read from the store is trusted without reading it
        /// again, when the store reports commits (`followCommits`): the
        /// longest a change nobody announced (a process killed between its
        /// commit and its notification) can go unseen by polls at the head.
        public var headTrustSeconds: Double

        public init(
            limits: ProtocolLimits = .standard, tombstoneRetentionSeconds: Double = 90 * 86_400,
            historyRetentionSeconds: Double = 30 * 86_400, historyBudget: HistoryBudget = HistoryBudget(),
            headTrustSeconds: Double = 60
        ) {
            self.limits = limits
            self.tombstoneRetentionSeconds = tombstoneRetentionSeconds
            self.historyRetentionSeconds = historyRetentionSeconds
            self.historyBudget = historyBudget
            self.headTrustSeconds = headTrustSeconds
        }
    }

    public let store: any ServerStore
    public let configuration: Configuration
    public let notifier = ChangeNotifier()
    let heads: FeedHeads
    let ownChanges = OwnChangesLedger()
    let tokenUses = TokenUseThrottle()
    let accountKeys = AccountKeyCache()
    public let metrics = ServerMetrics()
    let clock: ServerClock
    let logger: any ServerLogger

    public init(
        store: any ServerStore, configuration: Configuration = Configuration(), clock: ServerClock = .system,
        logger: any ServerLogger = SilentLogger()
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        heads = FeedHeads(trustSeconds: configuration.headTrustSeconds)
    }

    var limits: ProtocolLimits { configuration.limits }

    /// The routes, for metrics labels and method checks.
    enum Route: String, CaseIterable {
        case push, changes, index, fetch, versions, version, tree, healthz, metrics, unknown

        init(path: String) {
            switch path {
            case Endpoint.push: self = .push
            case Endpoint.changes: self = .changes
            case Endpoint.index: self = .index
            case Endpoint.fetch: self = .fetch
            case Endpoint.historyVersions: self = .versions
            case Endpoint.historyVersion: self = .version
            case Endpoint.historyTree: self = .tree
            case Endpoint.healthz: self = .healthz
            case Endpoint.metrics: self = .metrics
            default: self = .unknown
            }
        }

        var method: String {
            switch self {
            case .push, .fetch: "POST"
            default: "GET"
            }
        }

        var queryParameters: Set<String> {
            switch self {
            case .changes: [Endpoint.Query.since, Endpoint.Query.limit, Endpoint.Query.wait, Endpoint.Query.device]
            case .index: [Endpoint.Query.after, Endpoint.Query.limit]
            case .versions: [Endpoint.Query.entity, Endpoint.Query.before, Endpoint.Query.limit]
            case .version: [Endpoint.Query.entity, Endpoint.Query.version]
            case .tree: [Endpoint.Query.at, Endpoint.Query.after, Endpoint.Query.limit, Endpoint.Query.bodies]
            default: []
            }
        }
    }

    /// Answers one request. Never throws: every failure is an error response.
    public func handle(_ request: ServerRequest) async -> ServerResponse {
        let started = ContinuousClock.now
        let route = Route(path: request.path)
        var response: ServerResponse
        do {
            response = try await dispatch(route, request)
        } catch {
            let (serverError, detail) = ServerError.from(error)
            response = serverError.response
            response.logNote = serverError.parts.code.rawValue
            if let detail {
                logger.log("error: \(LogText.escaped(request.method)) \(LogText.escaped(request.path)): \(detail)")
            }
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.record(route: route.rawValue, status: response.status, seconds: seconds)
        return response
    }

    private func dispatch(_ route: Route, _ request: ServerRequest) async throws -> ServerResponse {
        guard route != .unknown else { throw ServerError.notFound(String(request.path.prefix(100))) }
        guard request.method == route.method else { throw ServerError.methodNotAllowed(route.method) }
        for name in request.query.keys where !route.queryParameters.contains(name) {
            throw ServerError.badRequest("unknown query parameter '\(name.prefix(40))'")
        }
        switch route {
        case .healthz:
            return ServerResponse(status: 200, contentType: "application/json", body: Data(#"{"status":"ok"}"#.utf8))
        case .metrics:
            let accounts = try? await store.accountCount()
            let text = metrics.render(longPollsHeld: notifier.waitingCount, accounts: accounts)
            return ServerResponse(status: 200, contentType: "text/plain; version=0.0.4", body: Data(text.utf8))
        case .push:
            return try await push(request, account: try await authenticate(request))
        case .changes:
            return try await changes(request, account: try await authenticate(request))
        case .index:
            return try await index(request, account: try await authenticate(request))
        case .fetch:
            return try await fetch(request, account: try await authenticate(request))
        case .versions:
            return try await historyVersions(request, account: try await authenticate(request))
        case .version:
            return try await historyVersion(request, account: try await authenticate(request))
        case .tree:
            return try await historyTree(request, account: try await authenticate(request))
        case .unknown:
            throw ServerError.notFound(request.path)
        }
    }

    /// The key clients bind their database to (`AccountKey`).
    func accountKey(_ account: AccountID) async throws -> String {
        accountKeys.key(secret: try await store.installationSecret(), account: account)
    }

    // MARK: Push

    private func push(_ request: ServerRequest, account: AccountID) async throws -> ServerResponse {
        let push = try decodePush(request.body)
        guard push.changes.count <= limits.pushChangesMax else {
            throw ServerError.tooManyChanges(
                "\(push.changes.count) changes in one push; at most \(limits.pushChangesMax)")
        }
        var changeIds = Set<ChangeID>()
        var refs = Set<EntityRef>()
        for change in push.changes {
            guard changeIds.insert(change.changeId).inserted else {
                throw ServerError.badRequest("change id \(change.changeId) appears twice in one push")
            }
            guard refs.insert(change.ref).inserted else {
                throw ServerError.badRequest("\(change.ref) has more than one change in one push")
            }
        }
        if let name = push.deviceName, !PushRequest.isValidDeviceName(name) {
            throw ServerError.badRequest(
                "deviceName must be 1 to \(PushRequest.deviceNameBytesMax) bytes of UTF-8 without control characters")
        }
        let prepared = try push.changes.map { change throws(ServerError) in try PreparedChange(change, limits: limits) }
        let payloadBytes = prepared.reduce(0) { total, change in
            change.refusal?.reason == .noteTooLarge ? total : total + change.body.count + change.change.payloadNameBytes
        }
        if prepared.count > 1 && payloadBytes > limits.pushPayloadBytesMax {
            throw ServerError.pushTooLarge(
                "\(payloadBytes) payload bytes in one push of several changes; at most \(limits.pushPayloadBytesMax)")
        }
        // A cursor the server could never have made is the client's bug, not a
        // restored server: 400, so the client does not start a full resync.
        if let cursor = push.cursor, cursor.epoch == nil || cursor.counter == nil {
            throw ServerError.badRequest("cursor is not a cursor this server made (expected <epoch>.<counter>)")
        }
        let epoch = try await store.epoch()
        if let cursor = push.cursor, cursor.epoch != epoch {
            // The bases of these changes may be versions from a history this
            // server lost (it was restored): the client resyncs first.
            throw ServerError.cursorGone("the cursor is from another server epoch (a restored or replaced server)")
        }
        let now = clock.now()
        // A client with no cursor has seen nothing: it stands at 0.
        let clientCounter = push.cursor?.counter ?? 0
        let device = push.device
        // Other processes hear the stretch with the commit and skip it for this device's polls too.
        let own: @Sendable (PushProcessor.Outcome) -> OwnChanges? = { outcome in
            guard let head = outcome.caughtUp, head > clientCounter else { return nil }
            return OwnChanges(device: device, epoch: epoch, from: clientCounter, to: head)
        }
        let outcome = try await store.push(account: account, ownChanges: own) { transaction in
            try PushProcessor.apply(prepared, in: transaction, device: device, now: now, clientCounter: clientCounter)
        }
        if let name = push.deviceName {
            // After the changes: a push that fails changes nothing, its name included.
            try await store.recordDeviceName(account: account, device: device, name: name, at: now)
        }
        let ownStretch = own(outcome)
        if let own = ownStretch {
            // Before waking polls: this device's own poll sleeps through its push.
            ownChanges.record(account: account, device: device, epoch: epoch, from: own.from, to: own.to)
        }
        if outcome.tally.replayed > 0 {
            // A remembered answer: the commit it answers may never have been
            // announced (its process died first). Announced now, as a push.
            heads.forget(account)
            (store as? any CommitReporting)?.announceCommit(RemoteCommit(account: account, own: ownStretch))
        }
        if outcome.tally.applied + outcome.tally.replayed > 0 { notifier.notify(account) }
        metrics.record(outcome.tally)
        var body = Data(#"{"results":["#.utf8)
        for (index, result) in outcome.results.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(result)
        }
        // The epoch is the server's own letters, digits and dashes: no escaping.
        body.append(contentsOf: Array(#"],"startCursor":"\#(SyncCursor(epoch: epoch, counter: 0).rawValue)""#.utf8))
        if let head = outcome.caughtUp {
            body.append(contentsOf: Array(#","nextCursor":"\#(SyncCursor(epoch: epoch, counter: head).rawValue)""#.utf8))
        }
        // The key is lowercase hex: no escaping.
        body.append(contentsOf: Array(#","account":"\#(try await accountKey(account))"}"#.utf8))
        let tally = outcome.tally
        return ServerResponse(
            status: 200, contentType: "application/json", body: body,
            logNote:
                "account=\(account) device=\(push.device) applied=\(tally.applied) unchanged=\(tally.unchanged) "
                + "conflict=\(tally.conflicts) "
                + "refused=\(tally.refused) replayed=\(tally.replayed)"
                + (push.deviceName.map { " name=" + LogText.escaped($0, limit: PushRequest.deviceNameBytesMax) } ?? ""))
    }

    // MARK: Index and fetch

    private func index(_ request: ServerRequest, account: AccountID) async throws -> ServerResponse {
        let limit = try pageLimit(request, max: limits.indexRowsMax)
        let after = try afterParameter(request)
        let epoch = try await store.epoch()
        let read = try await store.index(account: account, after: after, rowsMax: limit)
        var response = ServerResponse.json(
            IndexPage(
                entries: read.entries, hasMore: read.hasMore,
                nextAfter: read.hasMore ? read.entries.last?.ref.description : nil,
                cursor: SyncCursor(epoch: epoch, counter: read.head.counter), epoch: epoch,
                account: try await accountKey(account)))
        response.logNote = "account=\(account) rows=\(read.entries.count)"
        return response
    }

    private func fetch(_ request: ServerRequest, account: AccountID) async throws -> ServerResponse {
        let fetch = try decode(FetchRequest.self, from: request.body)
        guard fetch.entities.count <= limits.fetchEntitiesMax else {
            throw ServerError.tooManyChanges(
                "\(fetch.entities.count) entities in one fetch; at most \(limits.fetchEntitiesMax)")
        }
        guard Set(fetch.entities).count == fetch.entities.count else {
            throw ServerError.badRequest("an entity appears twice in one fetch")
        }
        let read = try await store.entities(account: account, refs: fetch.entities, bytesMax: limits.pageBytesMax)
        var response = ServerResponse.json(
            FetchResponse(entities: read.found.map(\.wire), notFound: read.notFound, omitted: read.omitted))
        response.logNote = "account=\(account) rows=\(read.found.count)"
        return response
    }

    // MARK: Maintenance

    /// Removes tombstones and change ids older than the retention period.
    public func purgeExpired() async throws -> PurgeReport {
        try await store.purge(before: clock.now().addingTimeInterval(-configuration.tombstoneRetentionSeconds))
    }

    /// Answers every parked long poll now and every later one at once; call
    /// before stopping the HTTP server.
    public func beginShutdown() {
        notifier.close()
    }
}
