import Foundation
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// `account tokens` and `account revoke --token`: one token of an account
/// is listed with its use and revoked alone.
@Suite(.serialized) struct TokenCommandTests {
    @Test(arguments: StoreFactory.all)
    func oneTokenIsRevokedAloneAndTokensListTheirLastUse(factory: StoreFactory) async throws {
        let h = try Harness(factory, .http)
        let manager = AccountManager(store: h.store)
        let first = try await manager.add(name: "rotating").token
        let second = try await manager.add(name: "rotating").token
        #expect(try await h.send("GET", Endpoint.changes, token: first.text).status == 200)
        // The use is recorded off the request's path.
        var listed: [TokenSummary] = []
        #expect(
            try await waitUntil {
                listed = try await manager.tokens(name: "rotating")
                return listed.contains { $0.tokenID == first.id && $0.lastUsedAt != nil }
            })
        // Listed by creation time; two made within one millisecond come in either order.
        #expect(Set(listed.map(\.tokenID)) == [first.id, second.id] && listed.count == 2)
        #expect(listed.first { $0.tokenID == first.id }?.lastUsedAt != nil)
        #expect(listed.first { $0.tokenID == second.id }?.lastUsedAt == nil)

        try await manager.revoke(name: "rotating", tokenID: first.id)
        #expect(try await h.send("GET", Endpoint.changes, token: first.text).status == 401)
        #expect(try await h.send("GET", Endpoint.changes, token: second.text).status == 200)
        let afterRevoke = try await manager.tokens(name: "rotating")
        #expect(afterRevoke.first { $0.tokenID == first.id }?.revoked == true)
        #expect(afterRevoke.first { $0.tokenID == second.id }?.revoked == false)
        await #expect(throws: ServerStoreError.noSuchToken(account: "rotating", token: "0123")) {
            try await manager.revoke(name: "rotating", tokenID: "0123")
        }
        await h.close()
    }

    @Test func theCommandListsAndRevokesOneToken() throws {
        guard let binary = MountFixture.binaryPath else {
            skipLoudly("the notesfs binary was not built")
            return
        }
        let directory = try TemporaryDirectory(prefix: "notesfs-tokens")
        defer { directory.remove() }
        let data = directory.file("server")
        let first = try MountFixture.run([binary, "account", "add", "dana", "--data", data])
        let second = try MountFixture.run([binary, "account", "add", "dana", "--data", data])
        let firstID = try #require(AccessToken(text: first.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))?.id)
        let secondID = try #require(AccessToken(text: second.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))?.id)
        let revoked = try MountFixture.run([binary, "account", "revoke", "dana", "--token", firstID, "--data", data])
        #expect(revoked.status == 0, "\(revoked.standardError)")
        let listed = try MountFixture.run([binary, "account", "tokens", "dana", "--data", data])
        #expect(listed.status == 0, "\(listed.standardError)")
        let lines = listed.standardOutput.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix(firstID) && $0.hasSuffix("revoked") }, "\(listed.standardOutput)")
        #expect(lines.contains { $0.hasPrefix(secondID) && $0.hasSuffix("active") && $0.contains("never") })
        let unknown = try MountFixture.run([binary, "account", "revoke", "dana", "--token", "ffff", "--data", data])
        #expect(unknown.status == 1)
        #expect(unknown.standardError.contains("account tokens dana"))
    }
}
