import Foundation
import SQLiteKit
import SyncServer

/// The SQLite server schema and its migrations (`PRAGMA user_version`).
/// Every table is keyed by account first.
enum SQLiteServerSchema {
    static let currentVersion = 6

    /// `now` stamps where the history of accounts that existed before
    /// version 3 starts (their older versions were never kept).
    static func migrate(_ connection: Connection, now: Date = Date()) throws {
        let version = try connection.userVersion
        guard version <= currentVersion else {
            throw ServerStoreError.failure(
                "\(connection.path) has schema version \(version), newer than this notesfs (\(currentVersion)); "
                    + "run a newer notesfs")
        }
        guard version < currentVersion else { return }
        // `transaction` takes the write lock (BEGIN IMMEDIATE); another process
        // (`serve` and `account add` on a fresh directory) may have migrated
        // while this one waited for it, so the version is read again inside.
        try connection.transaction {
            let version = try connection.userVersion
            if version < 1 {
                try connection.execute(
                    """
                    CREATE TABLE server_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
                    CREATE TABLE accounts(
                        account_id INTEGER PRIMARY KEY,
                        name TEXT NOT NULL UNIQUE,
                        counter INTEGER NOT NULL DEFAULT 0,
                        purged_through INTEGER NOT NULL DEFAULT 0,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER);
                    CREATE TABLE tokens(
                        token_id TEXT PRIMARY KEY,
                        account_id INTEGER NOT NULL REFERENCES accounts(account_id),
                        secret_hash BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER) WITHOUT ROWID;
                    CREATE INDEX tokens_by_account ON tokens(account_id);
                    CREATE TABLE entities(
                        account_id INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        change_id TEXT NOT NULL,
                        deleted INTEGER NOT NULL,
                        name TEXT NOT NULL,
                        body BLOB,
                        parent_id TEXT,
                        updated_at INTEGER NOT NULL,
                        PRIMARY KEY(account_id, kind, id));
                    CREATE UNIQUE INDEX entities_by_version ON entities(account_id, version);
                    CREATE INDEX tombstones_by_age ON entities(updated_at) WHERE deleted = 1;
                    CREATE TABLE seen_changes(
                        account_id INTEGER NOT NULL,
                        change_id TEXT NOT NULL,
                        payload_hash BLOB NOT NULL,
                        result BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        PRIMARY KEY(account_id, change_id));
                    CREATE INDEX seen_changes_by_age ON seen_changes(created_at);
                    """)
                try connection.run("INSERT INTO server_meta(key, value) VALUES ('epoch', ?)", ServerEpoch.make())
                try connection.setUserVersion(1)
            }
            if version < 2 {
                // When each token last authenticated a request (`account tokens`).
                try connection.execute("ALTER TABLE tokens ADD COLUMN last_used_at INTEGER")
                try connection.setUserVersion(2)
            }
            if version < 3 {
                // The history: every replaced version, with the device that
                // pushed it and when it was replaced (docs/server.md "History").
                try connection.execute(
                    """
                    ALTER TABLE entities ADD COLUMN device TEXT;
                    ALTER TABLE accounts ADD COLUMN history_since INTEGER NOT NULL DEFAULT 0;
                    CREATE TABLE entity_versions(
                        account_id INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        change_id TEXT NOT NULL,
                        deleted INTEGER NOT NULL,
                        name TEXT NOT NULL,
                        body BLOB,
                        parent_id TEXT,
                        updated_at INTEGER NOT NULL,
                        device TEXT,
                        replaced_at INTEGER NOT NULL,
                        PRIMARY KEY(account_id, kind, id, version));
                    CREATE INDEX entity_versions_by_age ON entity_versions(account_id, replaced_at);
                    """)
                try connection.run(
                    "UPDATE accounts SET history_since = ? WHERE counter > 0", SQLiteServerStore.milliseconds(now))
                try connection.setUserVersion(3)
            }
            if version < 5 {
                // The latest name each device told the server (docs/server.md
                // "Device names"). Version 4 is PostgreSQL's alone (lz4 bodies):
                // both stores go on from 5 together.
                try connection.execute(
                    """
                    CREATE TABLE devices(
                        account_id INTEGER NOT NULL,
                        device TEXT NOT NULL,
                        name TEXT NOT NULL,
                        named_at INTEGER NOT NULL,
                        PRIMARY KEY(account_id, device)) WITHOUT ROWID;
                    """)
                try connection.setUserVersion(5)
            }
            if version < 6 {
                try migrateToVersion6(connection)
            }
        }
    }

    /// Version 6 writes each version's body once: every version, the current
    /// one too, is a row of `entity_versions`, written when it is pushed and
    /// never rewritten by a push; `entities` keeps each entity's current
    /// version without its body. A row names the version it replaced
    /// (`replaces`), and a version was replaced when its successor was made
    /// (the successor's `updated_at`), which is what `replaced_at` held.
    private static func migrateToVersion6(_ connection: Connection) throws {
        try connection.execute(
            """
            CREATE TABLE entity_versions_6(
                account_id INTEGER NOT NULL,
                kind TEXT NOT NULL,
                id TEXT NOT NULL,
                version INTEGER NOT NULL,
                change_id TEXT NOT NULL,
                deleted INTEGER NOT NULL,
                name TEXT NOT NULL,
                body BLOB,
                parent_id TEXT,
                updated_at INTEGER NOT NULL,
                device TEXT,
                replaces INTEGER,
                PRIMARY KEY(account_id, kind, id, version));
            INSERT INTO entity_versions_6(
                account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device)
            SELECT account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device
            FROM entity_versions;
            INSERT INTO entity_versions_6(
                account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device)
            SELECT account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device
            FROM entities;
            UPDATE entity_versions_6 AS w SET replaces = (
                SELECT max(p.version) FROM entity_versions_6 p
                WHERE p.account_id = w.account_id AND p.kind = w.kind AND p.id = w.id AND p.version < w.version);
            DROP TABLE entity_versions;
            ALTER TABLE entity_versions_6 RENAME TO entity_versions;
            CREATE INDEX entity_versions_by_age ON entity_versions(account_id, updated_at) WHERE replaces IS NOT NULL;
            ALTER TABLE entities DROP COLUMN body;
            """)
        try connection.setUserVersion(6)
    }

    static func epoch(_ connection: Connection) throws -> String {
        guard let epoch = try connection.queryOne("SELECT value FROM server_meta WHERE key = 'epoch'", map: { $0.string(0) })
        else { throw ServerStoreError.failure("\(connection.path) has no epoch; it is not a notesfs server database") }
        return epoch
    }

    /// The installation secret (`AccountKey`), made the first time a store
    /// of this version opens the file. Kept in `server_meta`, so a restored
    /// backup keeps it; `INSERT OR IGNORE` under the write lock, so two
    /// processes opening a fresh file at once agree on one.
    static func installationSecret(_ connection: Connection) throws -> String {
        let select = "SELECT value FROM server_meta WHERE key = 'installation_secret'"
        if let secret = try connection.queryOne(select, map: { $0.string(0) }) { return secret }
        return try connection.transaction {
            try connection.run(
                "INSERT OR IGNORE INTO server_meta(key, value) VALUES ('installation_secret', ?)",
                RandomHex.make(bytes: 32))
            guard let secret = try connection.queryOne(select, map: { $0.string(0) }) else {
                throw ServerStoreError.failure("\(connection.path): the installation secret was not kept")
            }
            return secret
        }
    }
}
