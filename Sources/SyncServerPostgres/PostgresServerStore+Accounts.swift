import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// Accounts and tokens: the token check of every request (with its cache),
/// and what `notesfs account` does; token changes notify every process.
extension PostgresServerStore {
    public func token(id: String) async throws -> TokenRecord? {
        let now = ContinuousClock.now
        // Only while the listener listens: otherwise a revocation may go unheard.
        if listener?.isListening == true, let cached = shared.tokens.withLock({ $0[id] }), cached.expires > now {
            return cached.record
        }
        let record: TokenRecord? = try await run { connection in
            let rows = try connection.execute(
                """
                SELECT t.account_id, t.secret_hash, t.revoked_at IS NOT NULL OR a.revoked_at IS NOT NULL
                FROM tokens t JOIN accounts a ON a.account_id = t.account_id WHERE t.token_id = $1
                """, id)
            guard rows.rowCount == 1 else { return nil }
            return TokenRecord(
                tokenID: id, account: AccountID(try rows.int64(0, 0)), secretHash: Array(try rows.data(0, 1)),
                revoked: try rows.bool(0, 2))
        }
        // Only live tokens are kept: a revoked or unknown one is asked again
        // each time, so a token added anywhere works at once.
        if let record, !record.revoked, options.tokenCacheSeconds > 0, options.listen {
            let expires = now + .milliseconds(Int64(options.tokenCacheSeconds * 1_000))
            shared.tokens.withLock { tokens in
                // Bounded: a full cache starts over rather than grow.
                if tokens.count >= Self.tokenCacheEntriesMax { tokens.removeAll() }
                tokens[id] = (record, expires)
            }
        }
        return record
    }

    /// Cached tokens at most.
    static let tokenCacheEntriesMax = 100_000

    public func createAccount(name: String, at date: Date) async throws -> AccountID {
        try await run { connection in
            let rows = try connection.execute(
                """
                INSERT INTO accounts(name, created_at) VALUES ($1, $2)
                ON CONFLICT (name) DO NOTHING RETURNING account_id
                """, name, Self.milliseconds(date))
            guard rows.rowCount == 1 else { throw ServerStoreError.accountExists(name) }
            return AccountID(try rows.int64(0, 0))
        }
    }

    public func account(named name: String) async throws -> AccountSummary? {
        try await run { connection in
            let rows = try connection.execute("\(Self.summarySelect) WHERE a.name = $1", name)
            return rows.rowCount == 0 ? nil : try Self.summary(rows, 0)
        }
    }

    public func addToken(account: AccountID, tokenID: String, secretHash: [UInt8], at date: Date) async throws {
        try await run { [self] connection in
            try retrying(connection) {
                try connection.execute(
                    "SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE", account.rawValue)
                try connection.execute(
                    "INSERT INTO tokens(account_id, token_id, secret_hash, created_at) VALUES ($1, $2, $3, $4)",
                    account.rawValue, tokenID, secretHash, Self.milliseconds(date))
                try connection.execute("UPDATE accounts SET revoked_at = NULL WHERE account_id = $1", account.rawValue)
                // Delivered at commit: every process drops the account's cached tokens.
                try connection.execute("SELECT pg_notify($1, $2)", channel, "t:\(account.rawValue)")
            }
        }
        shared.forgetTokens(of: account)
    }

    public func revokeAccount(name: String, at date: Date) async throws {
        let account = try await run { [self] connection in
            try retrying(connection) {
                let now = Self.milliseconds(date)
                let rows = try connection.execute(
                    "UPDATE accounts SET revoked_at = $1 WHERE name = $2 RETURNING account_id", now, name)
                guard rows.rowCount == 1 else { throw ServerStoreError.noSuchAccount(name) }
                let account = try rows.int64(0, 0)
                try connection.execute(
                    "UPDATE tokens SET revoked_at = $1 WHERE account_id = $2 AND revoked_at IS NULL", now, account)
                // Delivered at commit: every process drops the account's cached tokens.
                try connection.execute("SELECT pg_notify($1, $2)", channel, "t:\(account)")
                return account
            }
        }
        shared.forgetTokens(of: AccountID(account))
    }

    public func tokens(accountName: String) async throws -> [TokenSummary] {
        try await run { connection in
            let account = try connection.execute("SELECT account_id FROM accounts WHERE name = $1", accountName)
            guard account.rowCount == 1 else { throw ServerStoreError.noSuchAccount(accountName) }
            let rows = try connection.execute(
                """
                SELECT token_id, created_at, last_used_at, revoked_at IS NOT NULL FROM tokens
                WHERE account_id = $1 ORDER BY created_at, token_id
                """, try account.int64(0, 0))
            return try (0..<rows.rowCount).map { row in
                TokenSummary(
                    tokenID: try rows.string(row, 0),
                    createdAt: Self.date(milliseconds: try rows.int64(row, 1)),
                    lastUsedAt: rows.isNull(row, 2) ? nil : Self.date(milliseconds: try rows.int64(row, 2)),
                    revoked: try rows.bool(row, 3))
            }
        }
    }

    public func revokeToken(accountName: String, tokenID: String, at date: Date) async throws {
        let account = try await run { [self] connection in
            try retrying(connection) {
                let rows = try connection.execute(
                    """
                    UPDATE tokens t SET revoked_at = coalesce(t.revoked_at, $1) FROM accounts a
                    WHERE a.account_id = t.account_id AND a.name = $2 AND t.token_id = $3 RETURNING t.account_id
                    """, Self.milliseconds(date), accountName, tokenID)
                guard rows.rowCount == 1 else {
                    let exists = try connection.execute("SELECT 1 FROM accounts WHERE name = $1", accountName)
                    if exists.rowCount == 0 { throw ServerStoreError.noSuchAccount(accountName) }
                    throw ServerStoreError.noSuchToken(account: accountName, token: tokenID)
                }
                let account = try rows.int64(0, 0)
                // Delivered at commit: every process drops the account's cached tokens.
                try connection.execute("SELECT pg_notify($1, $2)", channel, "t:\(account)")
                return account
            }
        }
        shared.forgetTokens(of: AccountID(account))
    }

    public func recordTokenUse(tokenID: String, at date: Date) async throws {
        try await run { connection in
            _ = try connection.execute(
                "UPDATE tokens SET last_used_at = $1 WHERE token_id = $2", Self.milliseconds(date), tokenID)
        }
    }

    public func accounts() async throws -> [AccountSummary] {
        try await run { connection in
            let rows = try connection.execute("\(Self.summarySelect) ORDER BY a.name")
            return try (0..<rows.rowCount).map { try Self.summary(rows, $0) }
        }
    }

    public func counterTotal() async throws -> Int64 {
        try await run { connection in
            try connection.execute("SELECT coalesce(sum(counter), 0)::bigint FROM accounts").int64(0, 0)
        }
    }

    public func accountCount() async throws -> Int {
        try await run { connection in try connection.execute("SELECT count(*) FROM accounts").int(0, 0) }
    }
}
