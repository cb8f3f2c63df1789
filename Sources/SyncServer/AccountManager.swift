import Foundation

/// Accounts and tokens, for `notesfs account` and tests.
public struct AccountManager: Sendable {
    /// What `add` did.
    public struct Added: Sendable {
        public var account: AccountID
        /// The token, shown once; only its hash is stored.
        public var token: AccessToken
        /// True when the account was made now (false: a token was added to an existing one).
        public var created: Bool
    }

    let store: any ServerStore
    let clock: ServerClock

    public init(store: any ServerStore, clock: ServerClock = .system) {
        self.store = store
        self.clock = clock
    }

    /// Makes the account when missing and issues a new token for it. A
    /// revoked account is reopened with only the new token.
    public func add(name: String) async throws -> Added {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 200, trimmed == name else {
            throw ServerStoreError.failure("an account name is 1 to 200 bytes with no surrounding spaces")
        }
        var created = false
        let account: AccountID
        if let existing = try await store.account(named: name) {
            account = existing.id
        } else {
            do {
                account = try await store.createAccount(name: name, at: clock.now())
                created = true
            } catch ServerStoreError.accountExists {
                guard let existing = try await store.account(named: name) else { throw ServerStoreError.noSuchAccount(name) }
                account = existing.id
            }
        }
        let token = AccessToken.generate()
        try await store.addToken(account: account, tokenID: token.id, secretHash: token.secretHash, at: clock.now())
        return Added(account: account, token: token, created: created)
    }

    public func list() async throws -> [AccountSummary] {
        try await store.accounts()
    }

    /// Revokes every token of the account; its notes stay.
    public func revoke(name: String) async throws {
        try await store.revokeAccount(name: name, at: clock.now())
    }

    /// Revokes one token of the account; its other tokens keep working.
    public func revoke(name: String, tokenID: String) async throws {
        try await store.revokeToken(accountName: name, tokenID: tokenID, at: clock.now())
    }

    /// The account's tokens, oldest first, with their creation and last use.
    public func tokens(name: String) async throws -> [TokenSummary] {
        try await store.tokens(accountName: name)
    }
}
