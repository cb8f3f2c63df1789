/// Why a store could not do what was asked. The HTTP layer answers
/// `unavailable` with 503 (retry later) and `failure` with 500.
public enum ServerStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Busy, full, shutting down or not reachable: retrying later may work.
    case unavailable(String)
    /// Anything else: a bug or damaged data.
    case failure(String)
    /// `createAccount` with a name that exists.
    case accountExists(String)
    /// An account command named an account that does not exist.
    case noSuchAccount(String)
    /// `revokeToken` named a token the account does not have.
    case noSuchToken(account: String, token: String)

    public var description: String {
        switch self {
        case .unavailable(let message): "store unavailable: \(message)"
        case .failure(let message): "store failure: \(message)"
        case .accountExists(let name): "an account named '\(name)' exists already"
        case .noSuchAccount(let name): "there is no account named '\(name)'"
        case .noSuchToken(let account, let token): "account '\(account)' has no token \(token)"
        }
    }
}
