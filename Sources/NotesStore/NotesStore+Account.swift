import Foundation
import SQLiteKit

/// What a store syncs as: the account a server named (`account:<key>`) and
/// the token that last confirmed it. Both nil before the first contact.
public struct AccountBinding: Sendable, Equatable {
    /// `account:<key>` once a server named the token's account; nil before
    /// (and with a server that names no accounts).
    public var account: String?
    /// The id of the token that last confirmed the binding (the part of
    /// `nfs_<id>_<secret>` that is not secret).
    public var tokenID: String?

    public init(account: String? = nil, tokenID: String? = nil) {
        self.account = account
        self.tokenID = tokenID
    }

    /// Never bound: the first server and token to answer take it.
    public var isEmpty: Bool { account == nil && tokenID == nil }

    /// Whether a server's answer to the token `tokenID` may sync this store,
    /// and the binding to keep if so. `serverAccount` is the account the
    /// server named (`account:<key>`, nil from a server that names none);
    /// `tokenID` nil means the caller keeps one token per store (tests, the
    /// simulation). A token belongs to one account for good, so the token
    /// that confirmed the binding is accepted whatever key it now gets (the
    /// server was restored from a backup older than its keys); any token of
    /// the bound account is accepted; anything else is refused with the
    /// reason and the way out. `server` names the server in messages.
    public func check(serverAccount: String?, tokenID: String?, server: String) -> Result<AccountBinding, StoreError> {
        let sameToken = tokenID != nil && self.tokenID == tokenID
        let confirmed = AccountBinding(account: serverAccount ?? account, tokenID: tokenID ?? self.tokenID)
        if let serverAccount {
            if account == serverAccount || isEmpty || sameToken { return .success(confirmed) }
            if account != nil {
                return .failure(.syncMismatch(
                    "the token in use belongs to another account on \(server) (or to another server installation) "
                        + "than the one this notes database syncs with; nothing was sent or received. "
                        + Self.wayOut))
            }
        } else if isEmpty || sameToken || tokenID == nil {
            return .success(confirmed)
        }
        let bound = self.tokenID.map { "token \($0)" } ?? "another token"
        let reason =
            serverAccount == nil
            ? "\(server) does not name the account a token belongs to (a server older than this notesfs), so "
                + "notesfs cannot tell whether the token in use (\(tokenID ?? "?")) belongs to the account this notes "
                + "database synced with through \(bound); nothing was sent or received. Mount with \(bound) again, "
                + "upgrade the server, or " + Self.wayOutLowercase
            : "this notes database last synced through \(bound), before the server named accounts, so notesfs "
                + "cannot tell whether the token in use (\(tokenID ?? "?")) belongs to the same account; nothing was "
                + "sent or received. Mount once with \(bound) if it still works (that records the account, and "
                + "then every token of it works), or " + Self.wayOutLowercase
        return .failure(.syncMismatch(reason))
    }

    static let wayOutLowercase =
        "to move these notes to the token's account (keeping every note), unmount and run: "
        + "notesfs sync --rebind --server URL --token-file F, then mount; for a separate set of notes, mount another "
        + "--profile with this token."
    static let wayOut =
        "To sync this database as before, mount it with its account's token (--token-file); "
        + wayOutLowercase
}

// Which account this store syncs as (docs/sync.md "One account per database").
extension NotesStore {
    /// The account this store is bound to.
    func accountBinding() throws(StoreError) -> AccountBinding {
        try read { db in
            try db.queryOne("SELECT account_id, account_token_id FROM sync_state WHERE id = 1") {
                AccountBinding(account: $0.optionalString(0), tokenID: $0.optionalString(1))
            } ?? AccountBinding()
        }
    }

    /// Checks a server's answer against the binding (`AccountBinding.check`)
    /// and keeps the binding it confirms, in one transaction: the first
    /// answer binds a new store, a `token:` binding from before gets its
    /// key, a second token of the account becomes the confirming one.
    /// Throws `syncMismatch` with the reason and the way out, changing nothing.
    @discardableResult
    func confirmAccount(serverAccount: String?, tokenID: String?) throws(StoreError) -> AccountBinding {
        try write(origin: .local, checkSpace: false) { db, _ in
            let (current, server) =
                try db.queryOne("SELECT account_id, account_token_id, server_url FROM sync_state WHERE id = 1") {
                    (AccountBinding(account: $0.optionalString(0), tokenID: $0.optionalString(1)), $0.optionalString(2))
                } ?? (AccountBinding(), nil)
            switch current.check(serverAccount: serverAccount, tokenID: tokenID, server: server ?? "the server") {
            case .failure(let error): throw error
            case .success(let binding):
                if binding != current {
                    try db.run(
                        "UPDATE sync_state SET account_id = ?, account_token_id = ? WHERE id = 1", binding.account,
                        binding.tokenID)
                }
                return binding
            }
        }
    }
}
