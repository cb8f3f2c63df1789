import Foundation

/// A token found live before its request's body was read. The HTTP layer
/// hands it to the handler of that same request, which then takes the
/// account from it instead of looking the token up a second time. Only
/// `SyncServer.checkCredentials` makes one.
public struct CheckedCredentials: Sendable {
    let account: AccountID
    /// The `Authorization` header that was checked.
    let authorization: String
    /// When the check found the token live (the server's clock).
    let checkedAt: Date
}

/// What the token check before a body found.
public enum CredentialCheck: Sendable {
    /// The token is live: read the body, and pass these to the handler.
    case live(CheckedCredentials)
    /// The answer to send instead of reading the body (401, or 503 when the
    /// store cannot answer).
    case refused(ServerResponse)
}

extension SyncServer {
    /// How long a check made before the body stands for the handler's own:
    /// a body that takes longer to arrive (a large push on a slow link) has
    /// its token looked up again, so a revocation never waits longer than
    /// this for a request already past its check.
    public static let checkedCredentialsTrustSeconds = 1.0

    /// Checks the token of a request before its body is read; `completion`
    /// runs once, on any thread. Made for libmicrohttpd's thread: the look-up
    /// goes straight to the store's reader, with no task in between.
    public func checkCredentials(
        authorization: String?, completion: @escaping @Sendable (CredentialCheck) -> Void
    ) {
        guard let token = AccessToken.fromAuthorization(authorization) else {
            completion(refusal(ServerError.unauthorized))
            return
        }
        store.token(id: token.id) { [self] found in
            do {
                let account = try accept(token, found.get())
                completion(.live(CheckedCredentials(account: account, authorization: authorization ?? "", checkedAt: clock.now())))
            } catch {
                completion(refusal(error))
            }
        }
    }

    /// `checkCredentials(authorization:completion:)` for a caller in a task.
    public func checkCredentials(authorization: String?) async -> CredentialCheck {
        await withCheckedContinuation { continuation in
            checkCredentials(authorization: authorization) { continuation.resume(returning: $0) }
        }
    }

    private func refusal(_ error: any Error) -> CredentialCheck {
        let (serverError, detail) = ServerError.from(error)
        if let detail { logger.log("error: token check: \(detail)") }
        var response = serverError.response
        response.logNote = serverError.parts.code.rawValue
        metrics.record(route: Route.unknown.rawValue, status: response.status, seconds: 0)
        return .refused(response)
    }

    /// The account of the request's token; 401 for anything else. A check
    /// made for this request before its body was read, of the same header
    /// and recent enough, answers without a second look-up.
    func authenticate(_ request: ServerRequest) async throws -> AccountID {
        if let checked = request.checkedCredentials, let authorization = request.authorization,
            checked.authorization == authorization
        {
            let age = clock.now().timeIntervalSince(checked.checkedAt)
            if age >= 0 && age <= Self.checkedCredentialsTrustSeconds { return checked.account }
        }
        guard let token = AccessToken.fromAuthorization(request.authorization) else { throw ServerError.unauthorized }
        return try accept(token, try await store.token(id: token.id))
    }

    /// The account of `token` when `record` (its row) shows it live; records
    /// the use at most once a minute, off the request's path.
    private func accept(_ token: AccessToken, _ record: TokenRecord?) throws -> AccountID {
        guard let record, !record.revoked, AccessToken.constantTimeEqual(token.secretHash, record.secretHash) else {
            throw ServerError.unauthorized
        }
        let now = clock.now()
        if tokenUses.shouldRecord(token.id, at: now) {
            // A failed record costs only the last-use time.
            let store = store
            Task { try? await store.recordTokenUse(tokenID: token.id, at: now) }
        }
        return record.account
    }
}
