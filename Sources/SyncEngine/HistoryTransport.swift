import Foundation
import NotesModel
import SyncProtocol

/// How a client reads the server's history (docs/sync.md "The server's
/// history"): an entity's versions, one version's content, the tree as of a
/// time. The HTTP client implements it.
public protocol HistoryTransport: Sendable {
    /// `GET /v1/history/versions`: one page of `ref`'s kept versions, newest
    /// first, those below `before` when given.
    func versions(of ref: EntityRef, before: Int64?, limit: Int) async throws(TransportError) -> VersionsPage
    /// `GET /v1/history/version`: version `version` of `ref` with its
    /// content; nil when the server does not keep it.
    func version(of ref: EntityRef, version: Int64) async throws(TransportError) -> HistoricEntity?
    /// `GET /v1/history/tree`: one page of the tree as it was at `at`.
    func tree(at: Date, after: String?, limit: Int) async throws(TransportError) -> TreePage
    /// `GET /v1/history/tree?bodies=false`: one page of the tree as it was
    /// at `at`, without the notes' text.
    func treeSummary(at: Date, after: String?, limit: Int) async throws(TransportError) -> TreeSummaryPage
}

/// Every version of an entity, or every entry of a past tree, fetched page
/// by page.
public struct HistoryListing<Item: Sendable>: Sendable {
    public var items: [Item]
    /// From when the account's history is whole (nil: always); see `TreePage.keptSince`.
    public var keptSince: Date?

    public init(items: [Item], keptSince: Date?) {
        self.items = items
        self.keptSince = keptSince
    }
}

extension HistoryTransport {
    /// Pages a listing may take at most before the server is taken to be
    /// looping (a million versions, or 200 million entities).
    static var pagesMax: Int { 1_000_000 }

    /// Every kept version of `ref`, newest first.
    public func allVersions(of ref: EntityRef) async throws(TransportError) -> HistoryListing<VersionSummary> {
        var listing = HistoryListing<VersionSummary>(items: [], keptSince: nil)
        var before: Int64?
        for _ in 0..<Self.pagesMax {
            let page = try await versions(of: ref, before: before, limit: 1_000)
            listing.items += page.versions
            listing.keptSince = page.keptSince
            guard page.hasMore else { return listing }
            guard let next = page.nextBefore, before.map({ next < $0 }) ?? true else {
                throw .serverBroke("a versions page said more follow but gave no lower nextBefore")
            }
            before = next
        }
        throw .serverBroke("the versions of \(ref) did not end after \(Self.pagesMax) pages")
    }

    /// Every note and folder live at `at`, at the version it had then, in (kind, id) order.
    public func wholeTree(at: Date) async throws(TransportError) -> HistoryListing<HistoricEntity> {
        var listing = HistoryListing<HistoricEntity>(items: [], keptSince: nil)
        try await forEachTreePage(at: at) { page in
            listing.items += page.entries
            listing.keptSince = page.keptSince
        }
        return listing
    }

    /// Hands each page of the tree at `at` (with the notes' text) to `receive`, in order.
    public func forEachTreePage(at: Date, _ receive: (TreePage) -> Void) async throws(TransportError) {
        var after: String?
        for _ in 0..<Self.pagesMax {
            let page = try await tree(at: at, after: after, limit: 200)
            receive(page)
            guard page.hasMore else { return }
            guard let next = page.nextAfter, next != after else {
                throw .serverBroke("a tree page said more follow but gave no new nextAfter")
            }
            after = next
        }
        throw .serverBroke("the tree at \(WireTime.format(at)) did not end after \(Self.pagesMax) pages")
    }

    /// Every note and folder live at `at` without the notes' text, in (kind, id) order.
    public func wholeTreeSummary(at: Date) async throws(TransportError) -> HistoryListing<TreeSummaryEntry> {
        var listing = HistoryListing<TreeSummaryEntry>(items: [], keptSince: nil)
        var after: String?
        for _ in 0..<Self.pagesMax {
            let page = try await treeSummary(at: at, after: after, limit: 1_000)
            listing.items += page.entries
            listing.keptSince = page.keptSince
            guard page.hasMore else { return listing }
            guard let next = page.nextAfter, next != after else {
                throw .serverBroke("a tree page said more follow but gave no new nextAfter")
            }
            after = next
        }
        throw .serverBroke("the tree at \(WireTime.format(at)) did not end after \(Self.pagesMax) pages")
    }
}

extension HTTPSyncTransport: HistoryTransport {
    public func versions(of ref: EntityRef, before: Int64? = nil, limit: Int = 1_000) async throws(TransportError)
        -> VersionsPage
    {
        var query = [
            URLQueryItem(name: Endpoint.Query.entity, value: ref.description),
            URLQueryItem(name: Endpoint.Query.limit, value: String(limit)),
        ]
        if let before { query.append(URLQueryItem(name: Endpoint.Query.before, value: String(before))) }
        let (status, data) = try await send(method: "GET", path: Endpoint.historyVersions, query: query)
        return try TransportDecoding.decode(VersionsPage.self, status: status, body: data, server: serverName)
    }

    public func version(of ref: EntityRef, version: Int64) async throws(TransportError) -> HistoricEntity? {
        let query = [
            URLQueryItem(name: Endpoint.Query.entity, value: ref.description),
            URLQueryItem(name: Endpoint.Query.version, value: String(version)),
        ]
        let (status, data) = try await send(method: "GET", path: Endpoint.historyVersion, query: query)
        return try TransportDecoding.decode(VersionResponse.self, status: status, body: data, server: serverName).entity
    }

    public func tree(at: Date, after: String? = nil, limit: Int = 200) async throws(TransportError) -> TreePage {
        var query = [
            URLQueryItem(name: Endpoint.Query.at, value: WireTime.format(at)),
            URLQueryItem(name: Endpoint.Query.limit, value: String(limit)),
        ]
        if let after { query.append(URLQueryItem(name: Endpoint.Query.after, value: after)) }
        let (status, data) = try await send(method: "GET", path: Endpoint.historyTree, query: query)
        return try TransportDecoding.decode(TreePage.self, status: status, body: data, server: serverName)
    }

    public func treeSummary(at: Date, after: String? = nil, limit: Int = 1_000) async throws(TransportError)
        -> TreeSummaryPage
    {
        var query = [
            URLQueryItem(name: Endpoint.Query.at, value: WireTime.format(at)),
            URLQueryItem(name: Endpoint.Query.limit, value: String(limit)),
            URLQueryItem(name: Endpoint.Query.bodies, value: "false"),
        ]
        if let after { query.append(URLQueryItem(name: Endpoint.Query.after, value: after)) }
        let (status, data) = try await send(method: "GET", path: Endpoint.historyTree, query: query)
        // The direct reader first: a page holds up to 1,000 entries, and a
        // moment's first listing waits for every page.
        if (200..<300).contains(status), let page = TreeSummaryPage.read(data) { return page }
        return try TransportDecoding.decode(TreeSummaryPage.self, status: status, body: data, server: serverName)
    }
}
