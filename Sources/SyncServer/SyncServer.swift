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
        do {
            return answered(.success(try await dispatch(route, request)), request, route, started)
        } catch {
            return answered(.failure(error), request, route, started)
        }
    }

    /// `handle`, answering through `reply`, once, on any thread: a push is
    /// answered from the store's writer thread right after its commit when
    /// the store has one, with no hand-off back to a task. Keep `reply`
    /// short.
    public func handle(_ request: ServerRequest, reply: @escaping @Sendable (ServerResponse) -> Void) async {
        let started = ContinuousClock.now
        let route = Route(path: request.path)
        let answer: @Sendable (Result<ServerResponse, any Error>) -> Void = { [self] result in
            reply(answered(result, request, route, started))
        }
        do {
            guard route == .push else { return answer(.success(try await dispatch(route, request))) }
            try checkRoute(route, request)
            let push = try await preparePush(request, account: try await authenticate(request))
            submit(push, completion: answer)
        } catch {
            answer(.failure(error))
        }
    }

    /// The response for a handler's outcome (an error becomes its error
    /// response), with the request's metrics recorded.
    private func answered(
        _ outcome: Result<ServerResponse, any Error>, _ request: ServerRequest, _ route: Route,
        _ started: ContinuousClock.Instant
    ) -> ServerResponse {
        var response: ServerResponse
        switch outcome {
        case .success(let made):
            response = made
        case .failure(let error):
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

    /// Refuses a request its route does not take: an unknown path, another
    /// method, an unknown query parameter.
    private func checkRoute(_ route: Route, _ request: ServerRequest) throws {
        guard route != .unknown else { throw ServerError.notFound(String(request.path.prefix(100))) }
        guard request.method == route.method else { throw ServerError.methodNotAllowed(route.method) }
        for name in request.query.keys where !route.queryParameters.contains(name) {
            throw ServerError.badRequest("unknown query parameter '\(name.prefix(40))'")
        }
    }

    private func dispatch(_ route: Route, _ request: ServerRequest) async throws -> ServerResponse {
        try checkRoute(route, request)
        switch route {
        case .healthz:
            return ServerResponse(status: 200, contentType: "application/json", body: Data(#"{"status":"ok"}"#.utf8))
        case .metrics:
            let accounts = try? await store.accountCount()
            let text = metrics.render(longPollsHeld: notifier.waitingCount, accounts: accounts)
            return ServerResponse(status: 200, contentType: "text/plain; version=0.0.4", body: Data(text.utf8))
        case .push:
            let push = try await preparePush(request, account: try await authenticate(request))
            return try await withCheckedThrowingContinuation { continuation in
                submit(push) { continuation.resume(with: $0) }
            }
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
