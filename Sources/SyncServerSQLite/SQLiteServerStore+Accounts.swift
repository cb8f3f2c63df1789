import Foundation
import NotesModel
import SQLiteKit
import SyncProtocol
import SyncServer

/// Accounts and tokens: the token check of every request, and what
/// `notesfs account` does.
extension SQLiteServerStore {
    public func token(id: String) async throws -> TokenRecord? {
        try await read { connection in try Self.token(id: id, connection) }
    }

    public func token(id: String, completion: @escaping @Sendable (Result<TokenRecord?, any Error>) -> Void) {
        read({ connection in try Self.token(id: id, connection) }, completion: completion)
    }

    private static func token(id: String, _ connection: Connection) throws -> TokenRecord? {
        try connection.queryOne(
            """
            SELECT t.account_id, t.secret_hash, t.revoked_at IS NOT NULL OR a.revoked_at IS NOT NULL
            FROM tokens t JOIN accounts a ON a.account_id = t.account_id WHERE t.token_id = ?
            """, id
        ) { row in
            TokenRecord(
                tokenID: id, account: AccountID(row.int64(0)), secretHash: Array(row.data(1)), revoked: row.bool(2))
        }
    }

    public func createAccount(name: String, at date: Date) async throws -> AccountID {
        try await write { connection in
            if try connection.queryOne("SELECT 1 FROM accounts WHERE name = ?", name, map: { _ in true }) != nil {
                throw ServerStoreError.accountExists(name)
            }
            try connection.run(
                "INSERT INTO accounts(name, counter, purged_through, created_at) VALUES (?, 0, 0, ?)", name,
                Self.milliseconds(date))
            return AccountID(connection.lastInsertRowID)
        }
    }

    public func account(named name: String) async throws -> AccountSummary? {
        try await read { connection in
            try connection.queryOne("\(Self.summarySelect) WHERE a.name = ?", name, map: Self.summary)
        }
    }

    public func addToken(account: AccountID, tokenID: String, secretHash: [UInt8], at date: Date) async throws {
        try await write { connection in
            try connection.run(
                "INSERT INTO tokens(token_id, account_id, secret_hash, created_at) VALUES (?, ?, ?, ?)", tokenID,
                account.rawValue, secretHash, Self.milliseconds(date))
            try connection.run("UPDATE accounts SET revoked_at = NULL WHERE account_id = ?", account.rawValue)
        }
    }

    public func revokeAccount(name: String, at date: Date) async throws {
        try await write { connection in
            guard
                let id = try connection.queryOne(
                    "SELECT account_id FROM accounts WHERE name = ?", name, map: { $0.int64(0) })
            else { throw ServerStoreError.noSuchAccount(name) }
            let now = Self.milliseconds(date)
            try connection.run("UPDATE accounts SET revoked_at = ? WHERE account_id = ?", now, id)
            try connection.run(
                "UPDATE tokens SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL", now, id)
        }
    }

    public func tokens(accountName: String) async throws -> [TokenSummary] {
        try await read { connection in
            guard
                let id = try connection.queryOne(
                    "SELECT account_id FROM accounts WHERE name = ?", accountName, map: { $0.int64(0) })
            else { throw ServerStoreError.noSuchAccount(accountName) }
            return try connection.query(
                """
                SELECT token_id, created_at, last_used_at, revoked_at IS NOT NULL FROM tokens
                WHERE account_id = ? ORDER BY created_at, token_id
                """, id
            ) { row in
                TokenSummary(
                    tokenID: row.string(0), createdAt: Self.date(milliseconds: row.int64(1)),
                    lastUsedAt: row.optionalInt64(2).map { Self.date(milliseconds: $0) }, revoked: row.bool(3))
            }
        }
    }

    public func revokeToken(accountName: String, tokenID: String, at date: Date) async throws {
        try await write { connection in
            guard
                let id = try connection.queryOne(
                    "SELECT account_id FROM accounts WHERE name = ?", accountName, map: { $0.int64(0) })
            else { throw ServerStoreError.noSuchAccount(accountName) }
            try connection.run(
                "UPDATE tokens SET revoked_at = ifnull(revoked_at, ?) WHERE account_id = ? AND token_id = ?",
                Self.milliseconds(date), id, tokenID)
            guard connection.changes == 1 else {
                throw ServerStoreError.noSuchToken(account: accountName, token: tokenID)
            }
        }
    }

    public func recordTokenUse(tokenID: String, at date: Date) async throws {
        try await write { connection in
            try connection.run("UPDATE tokens SET last_used_at = ? WHERE token_id = ?", Self.milliseconds(date), tokenID)
        }
    }

    public func accounts() async throws -> [AccountSummary] {
        try await read { connection in
            try connection.query("\(Self.summarySelect) ORDER BY a.name", map: Self.summary)
        }
    }

    public func accountCount() async throws -> Int {
        try await read { connection in
            try connection.queryOne("SELECT count(*) FROM accounts", map: { $0.int(0) }) ?? 0
        }
    }
}

extension SQLiteServerStore: RevocationSource {
    public func revocationMark() async throws -> String {
        // Both tables are small (one row per account and per device); no
        // index is needed for a scan a few times a second while polls park.
        try await read { connection in
            try connection.queryOne(
                """
                SELECT (SELECT count(*) FROM tokens WHERE revoked_at IS NOT NULL),
                       (SELECT ifnull(max(revoked_at), 0) FROM tokens),
                       (SELECT count(*) FROM accounts WHERE revoked_at IS NOT NULL),
                       (SELECT ifnull(max(revoked_at), 0) FROM accounts)
                """
            ) { row in "\(row.int64(0)).\(row.int64(1)).\(row.int64(2)).\(row.int64(3))" } ?? ""
        }
    }
}
