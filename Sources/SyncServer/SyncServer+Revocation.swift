import Foundation

/// A store that can tell cheaply, across processes, that some token or
/// account was revoked (`notesfs account revoke` runs in its own process).
public protocol RevocationSource: Sendable {
    /// A value that changes whenever a token or an account is revoked.
    func revocationMark() async throws -> String
}

extension SyncServer {
    /// Wakes parked long polls (of `account`, or of every account) so each
    /// re-checks its token at once: a revoked one ends with 401, the others
    /// park again. Call when tokens were revoked.
    public func tokensChanged(account: AccountID?) {
        if let account {
            notifier.notify(account)
        } else {
            notifier.notifyAll()
        }
    }

    /// While long polls are parked, reads the store's revocation mark every
    /// `intervalSeconds` and wakes every parked poll when it moved, so a poll
    /// of a token revoked by another process ends within about that time.
    /// Returns at once for a store that is no `RevocationSource` (PostgreSQL
    /// signals revocations through `tokensChanged` instead); otherwise runs
    /// until cancelled or shutdown.
    public func watchRevocations(intervalSeconds: Double = revocationCheckIntervalSeconds) async {
        guard let source = store as? RevocationSource else { return }
        var lastMark = try? await source.revocationMark()
        while !Task.isCancelled && !notifier.isClosed {
            try? await Task.sleep(for: .milliseconds(Int64(intervalSeconds * 1_000)))
            // Idle: nothing to wake. The next read after a poll parks compares
            // with an older mark, which at worst wakes polls once for nothing.
            guard notifier.waitingCount > 0 else { continue }
            guard let mark = try? await source.revocationMark() else { continue }
            if mark != lastMark {
                lastMark = mark
                tokensChanged(account: nil)
            }
        }
    }

    /// How often `watchRevocations` looks by default.
    public static let revocationCheckIntervalSeconds = 0.2

    /// The answer for a request that may not carry a body, given only its
    /// method and path: 404 for an unknown path, 405 for a wrong method,
    /// 400 for a body on a route that takes none. Nil when the route takes
    /// a body (and then needs a token: `checkCredentials`).
    public func refusalOfBody(method: String, path: String) -> ServerResponse? {
        let route = Route(path: path)
        let error: ServerError
        if route == .unknown {
            error = .notFound(String(path.prefix(100)))
        } else if method != route.method {
            error = .methodNotAllowed(route.method)
        } else if route.method != "POST" {
            error = .badRequest("\(method) \(path) takes no request body")
        } else {
            return nil
        }
        var response = error.response
        response.logNote = error.parts.code.rawValue
        metrics.record(route: route.rawValue, status: response.status, seconds: 0)
        return response
    }
}
