import Foundation
import NotesModel
import SyncProtocol

/// The history routes (docs/server.md "History"): an entity's versions, one
/// version's content, and the tree as of a time, each for the token's
/// account only; and the background trimming that keeps the history within
/// its period and budget.
extension SyncServer {
    func historyVersions(_ request: ServerRequest, account: AccountID) async throws -> ServerResponse {
        let ref = try entityParameter(request)
        let limit = try pageLimit(request, max: limits.indexRowsMax)
        let before = try versionParameter(request, Endpoint.Query.before)
        let read = try await store.versions(account: account, ref: ref, before: before, rowsMax: limit)
        // Each device under the name it told last, not the one it had then.
        let names = try await store.deviceNames(account: account, devices: Set(read.versions.compactMap(\.device)))
        let summaries = read.versions.map { version in
            var summary = version.summary
            summary.deviceName = version.device.flatMap { names[$0] }
            return summary
        }
        var response = ServerResponse.json(
            VersionsPage(
                versions: summaries, hasMore: read.hasMore,
                nextBefore: read.hasMore ? read.versions.last?.version : nil, keptSince: read.keptSince,
                account: try await accountKey(account)))
        response.logNote = "account=\(account) rows=\(read.versions.count)"
        return response
    }

    func historyVersion(_ request: ServerRequest, account: AccountID) async throws -> ServerResponse {
        let ref = try entityParameter(request)
        guard let version = try versionParameter(request, Endpoint.Query.version) else {
            throw ServerError.badRequest("version is missing")
        }
        let record = try await store.version(account: account, ref: ref, version: version)
        var response = ServerResponse.json(VersionResponse(entity: record?.wire, account: try await accountKey(account)))
        response.logNote = "account=\(account) rows=\(record == nil ? 0 : 1)"
        return response
    }

    func historyTree(_ request: ServerRequest, account: AccountID) async throws -> ServerResponse {
        guard let text = request.query[Endpoint.Query.at] else { throw ServerError.badRequest("at is missing") }
        guard let at = WireTime.parse(text) else {
            throw ServerError.badRequest("at must be an RFC 3339 time such as 2025-01-05T14:03:22Z")
        }
        let bodies = try booleanParameter(request, Endpoint.Query.bodies) ?? true
        // Without text an entry is a few hundred bytes: pages as long as the index's.
        let limit = try pageLimit(request, max: bodies ? limits.pageRowsMax : limits.indexRowsMax)
        let after = try afterParameter(request)
        let read = try await store.tree(
            account: account, at: at, after: after, rowsMax: limit, bytesMax: limits.pageBytesMax, bodies: bodies)
        let nextAfter = read.hasMore ? read.last?.description : nil
        let key = try await accountKey(account)
        let body =
            bodies
            ? TreePage(
                at: at, entries: read.entries.map(\.wire), hasMore: read.hasMore, nextAfter: nextAfter,
                keptSince: read.keptSince, account: key
            ).wireJSON
            : TreeSummaryPage(
                at: at, entries: read.entries.map(\.treeSummary), hasMore: read.hasMore, nextAfter: nextAfter,
                keptSince: read.keptSince, account: key
            ).wireJSON
        var response = ServerResponse(status: 200, contentType: "application/json", body: body)
        response.logNote = "account=\(account) rows=\(read.entries.count)\(bodies ? "" : " bodies=false")"
        return response
    }

    // MARK: Maintenance

    /// Trims every account's history to its period and budget, in steps of
    /// at most `versionsPerStep` removals, each its own short transaction,
    /// and at most `stepsMax` steps in all, so one run stays bounded (the
    /// next run goes on). Runs in the background, never on a request's path.
    public func trimHistory(versionsPerStep: Int = 1_000, stepsMax: Int = 1_000) async throws -> HistoryTrimReport {
        precondition(versionsPerStep >= 1 && stepsMax >= 1, "trimming limits must be positive")
        let cutoff = clock.now().addingTimeInterval(-configuration.historyRetentionSeconds)
        var total = HistoryTrimReport()
        var steps = 0
        for account in try await store.historyAccounts() {
            while true {
                guard steps < stepsMax else {
                    total.done = false
                    return total
                }
                steps += 1
                let step = try await store.trimHistory(
                    account: account, replacedBefore: cutoff, budget: configuration.historyBudget,
                    versionsMax: versionsPerStep)
                total.versions += step.versions
                total.bytes += step.bytes
                if step.done { break }
            }
        }
        return total
    }

    // MARK: Parameters

    /// The `entity` query parameter: `note:<id>` or `folder:<id>`.
    private func entityParameter(_ request: ServerRequest) throws -> EntityRef {
        guard let text = request.query[Endpoint.Query.entity] else { throw ServerError.badRequest("entity is missing") }
        guard let ref = EntityRef(text) else {
            throw ServerError.badRequest("entity must be note:<id> or folder:<id>")
        }
        return ref
    }

    /// A `true`/`false` parameter, nil when absent.
    private func booleanParameter(_ request: ServerRequest, _ name: String) throws -> Bool? {
        switch request.query[name] {
        case nil: return nil
        case "true": return true
        case "false": return false
        default: throw ServerError.badRequest("\(name) must be true or false")
        }
    }

    /// A version number parameter (1 or more), nil when absent.
    private func versionParameter(_ request: ServerRequest, _ name: String) throws -> Int64? {
        guard let text = request.query[name] else { return nil }
        guard let value = Int64(text), value >= 1 else {
            throw ServerError.badRequest("\(name) must be a version number (a whole number ≥ 1)")
        }
        return value
    }
}
