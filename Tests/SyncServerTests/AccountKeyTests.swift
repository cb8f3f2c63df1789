import Foundation
import PostgresKit
import SQLiteKit
import SyncProtocol
import SyncServer
import SyncServerSQLite
import Testing
import TestSupport

/// The key the server names an account by (`AccountKey`): one per account
/// whatever the token, stable across restarts, new epochs and restores,
/// another on another installation, and telling nothing of the account.
@Suite struct AccountKeyTests {
    /// The key `token` gets from each answer that carries one.
    static func keys(_ h: Harness, _ token: String) async throws -> Set<String?> {
        let push = try await h.pushRaw([Make.note()], token: token).decode(PushResponse.self).account
        let changes = try await h.changes(token: token).account
        let index = try await h.index(token: token).account
        return [push, changes, index]
    }

    @Test func theKeyIsAnHMACOfTheInstallationSecretAndTheAccountIdCutTo128Bits() {
        // Python: hmac.new(secret, b"notesfs account key 1:<id>", sha256).hexdigest()[:32]
        #expect(AccountKey.make(secret: "Jefe", account: AccountID(1)) == "31b6684fe658dc6144bea0bfe64330da")
        #expect(
            AccountKey.make(secret: String(repeating: "k", count: 100), account: AccountID(42))
                == "961154b995e984ed24ae0fe41c91e1dc", "a secret longer than a block is hashed first")
    }

    @Test(arguments: StoreFactory.all)
    func everyTokenOfAnAccountGetsOneKeyThatSurvivesARestartAndANewEpoch(factory: StoreFactory) async throws {
        let h = try Harness(factory)
        let manager = AccountManager(store: h.store)
        let alice = try await manager.add(name: "alice")
        let second = try await manager.add(name: "alice").token.text
        let bob = try await manager.add(name: "bob").token.text
        let aliceKeys = try await Self.keys(h, alice.token.text)
        #expect(aliceKeys.count == 1)
        let key = try #require(aliceKeys.first ?? nil)
        #expect(key.count == 32 && key.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(key)")
        #expect(try await Self.keys(h, second) == [key], "a second token names the same account")
        let bobKey = try #require(try await Self.keys(h, bob).first ?? nil)
        #expect(bobKey != key)
        #expect(!key.contains("alice") && key != String(alice.account.rawValue))
        _ = try await h.store.newEpoch(now: Date())
        #expect(try await Self.keys(h, second) == [key], "a new epoch keeps the keys")
        await h.close(keepData: true)
        let reopened = try Harness(factory, directory: h.directory)
        #expect(try await Self.keys(reopened, alice.token.text) == [key])
        #expect(try await Self.keys(reopened, bob) == [bobKey])
        await reopened.close()
    }

    @Test(arguments: StoreFactory.all)
    func anotherInstallationGivesTheSameAccountIdAnotherKey(factory: StoreFactory) async throws {
        let one = try Harness(factory), two = try Harness(factory)
        let first = try await AccountManager(store: one.store).add(name: "alice")
        let second = try await AccountManager(store: two.store).add(name: "alice")
        #expect(first.account == second.account, "both installations number their first account alike")
        let firstKey = try await Self.keys(one, first.token.text)
        let secondKey = try await Self.keys(two, second.token.text)
        #expect(firstKey.count == 1 && secondKey.count == 1 && firstKey != secondKey)
        await one.close()
        await two.close()
    }

    @Test func storesOpeningAFreshSQLiteFileAtOnceAgreeOnOneSecret() async throws {
        for _ in 0..<8 {
            let directory = try TemporaryDirectory(prefix: "notesfs-secret")
            defer { directory.remove() }
            let path = SQLiteServerStore.databasePath(inDirectory: directory.path)
            let stores = try await withThrowingTaskGroup(of: SQLiteServerStore.self) { group in
                for _ in 0..<4 { group.addTask { try await onThread { try SQLiteServerStore(path: path) } } }
                var stores: [SQLiteServerStore] = []
                for try await store in group { stores.append(store) }
                return stores
            }
            var secrets = Set<String>()
            for store in stores {
                secrets.insert(try await store.installationSecret())
                await store.close()
            }
            #expect(secrets.count == 1)
        }
    }

    @Test func aRestoredSQLiteBackupKeepsEveryKey() async throws {
        let h = try Harness(.sqlite)
        let token = try await h.account("alice")
        let key = try await Self.keys(h, token)
        let backup = try TemporaryDirectory(prefix: "notesfs-restored")
        defer { backup.remove() }
        let db = try Connection(path: SQLiteServerStore.databasePath(inDirectory: h.directory.path))
        try db.execute("VACUUM INTO '\(SQLiteServerStore.databasePath(inDirectory: backup.path))'")
        await h.close()
        // Restored elsewhere (another machine, another path), with a new epoch as the docs ask.
        let restored = try Harness(.sqlite, directory: backup)
        _ = try await restored.store.newEpoch(now: Date())
        #expect(try await Self.keys(restored, token) == key)
        await restored.close()
    }

    @Test(arguments: StoreFactory.all)
    func aStoreWithoutASecretGetsOneWhenOpenedAndKeepsIt(factory: StoreFactory) async throws {
        let h = try Harness(factory)
        let token = try await h.account("alice")
        let before = try await Self.keys(h, token)
        await h.close(keepData: true)
        // As a database from before installation secrets were kept.
        let forget = "DELETE FROM server_meta WHERE key = 'installation_secret'"
        if factory.name == "sqlite" {
            try Connection(path: SQLiteServerStore.databasePath(inDirectory: h.directory.path)).execute(forget)
        } else {
            let cluster = try #require(PostgresTestCluster.cluster())
            let schema = PostgresTestCluster.schema(for: h.directory)
            let admin = try PostgresConnection(conninfo: cluster.conninfo() + " options='-c search_path=\(schema)'")
            try admin.executeScript(forget)
        }
        let reopened = try Harness(factory, directory: h.directory)
        let made = try await Self.keys(reopened, token)
        #expect(made.count == 1 && made.first != nil && made != before)
        await reopened.close(keepData: true)
        let again = try Harness(factory, directory: h.directory)
        #expect(try await Self.keys(again, token) == made, "made once, then kept")
        await again.close()
    }
}
