import Foundation
import SQLiteKit
import SyncServer
import TestSupport
import Testing
@testable import NotesStore

/// The real binary, server and mount: a profile is bound to its account, so
/// a second token of that account works on it (online or offline), and a
/// token of another account is refused at the mount when the server says so,
/// or blocks sync, not the mount, when it is first met offline.
@Suite(.serialized) struct AccountEndToEndTests {
    /// The id of the token in `path` (`nfs_<id>_<secret>`).
    static func tokenID(_ path: String) throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return try #require(AccessToken(text: text)).id
    }

    /// The account's change counter on `server`: how many changes it applied.
    static func counter(_ cluster: SyncCluster, _ server: ServerProcess, account: String) throws -> Int? {
        let listing = try cluster.notesfs(["account", "list", "--data", server.dataDirectory]).standardOutput
        guard let line = listing.split(separator: "\n").first(where: { $0.hasPrefix(account + " ") }) else { return nil }
        let columns = line.split(separator: " ")
        return columns.count > 3 ? Int(columns[3]) : nil
    }

    /// The store's binding as written in the file.
    static func binding(_ mount: MountFixture) throws -> (account: String?, token: String?) {
        let db = try Connection(path: mount.databasePath, options: .init(mode: .readOnly, walJournal: false))
        return try db.queryOne("SELECT account_id, account_token_id FROM sync_state WHERE id = 1") {
            ($0.optionalString(0), $0.optionalString(1))
        } ?? (nil, nil)
    }

    @Test func aSecondTokenOfTheAccountMountsTheProfileItHasAndTheFirstCanBeRevoked() throws {
        guard MountFixture.shouldRun else { return }
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        _ = try cluster.shell(a, "echo one > one.md && mkdir Work && echo two > Work/two.md")
        try cluster.waitFor("a sent everything") { try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 3 }
        let first = try Self.binding(a)
        let firstID = try Self.tokenID(cluster.tokenPath)
        #expect(first.account?.hasPrefix("account:") == true)
        #expect(first.token == firstID)
        a.unmount()

        // `account add alice` again: a second token; the server answers, so
        // the mount asks it about the new token and goes on.
        let secondToken = cluster.directory.file("token2")
        try cluster.server.addAccount("alice", tokenPath: secondToken)
        try a.mount(extraArguments: ["--token-file", secondToken])
        _ = try cluster.shell(a, "echo three > three.md && echo more >> one.md")
        try cluster.waitFor("a sent its edits with the second token") {
            try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 5
        }
        let secondID = try Self.tokenID(secondToken)
        let rebound = try Self.binding(a)
        #expect(rebound.account == first.account && rebound.token == secondID, "the same account, confirmed by the second token")
        #expect(!(a.text(".notesfs/status") ?? "").contains("failing"))
        a.unmount()

        // Rotation: the first token is revoked; the profile goes on with the second.
        let revoked = try cluster.notesfs([
            "account", "revoke", "alice", "--token", firstID, "--data",
            cluster.server.dataDirectory,
        ])
        #expect(revoked.status == 0, "\(revoked.standardError)")
        try a.mount()
        _ = try cluster.shell(a, "echo four > four.md")
        try cluster.waitFor("a sent four.md") { try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 6 }

        // One profile, every note once: a fresh machine with the second token sees the same tree.
        let viewer = try cluster.addMount(name: "viewer", tokenPath: secondToken)
        try cluster.waitFor("the viewer has every note") { viewer.text("four.md") == "four\n" }
        #expect(viewer.tree() == a.tree())
        #expect(viewer.names().sorted() == ["Work", "four.md", "one.md", "three.md"])
        #expect(viewer.text("one.md") == "one\nmore\n")
    }

    @Test func aTokenOfAnotherAccountIsRefusedAtTheMountWhenTheServerSaysSoAndNothingIsSaved() throws {
        guard MountFixture.shouldRun else { return }
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        _ = try cluster.shell(a, "echo kept > kept.md")
        try cluster.waitFor("a sent kept.md") { try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 1 }
        a.unmount()
        let profile = try String(contentsOfFile: a.dataDirectory + "/sync.json", encoding: .utf8)

        let bobToken = cluster.directory.file("bob.token")
        try cluster.server.addAccount("bob", tokenPath: bobToken)
        guard let binary = MountFixture.binaryPath else { throw MountFixture.Failure("notesfs binary not found") }
        let refused = try MountFixture.run([binary, "mount", a.mountpoint, "--data", a.dataDirectory, "--token-file", bobToken])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("belongs to another account"), "\(refused.standardError)")
        #expect(refused.standardError.contains("notesfs sync --rebind"), "\(refused.standardError)")
        #expect(!a.isMounted)
        #expect(try String(contentsOfFile: a.dataDirectory + "/sync.json", encoding: .utf8) == profile)
        #expect(try Self.counter(cluster, cluster.server, account: "bob") == 0)
        // The profile still mounts and syncs as before.
        try a.mount()
        #expect(a.text("kept.md") == "kept\n")
    }

    @Test func aSecondTokenOfTheAccountMetOfflineMountsAndSyncsOnceTheServerAnswers() throws {
        guard MountFixture.shouldRun else { return }
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        _ = try cluster.shell(a, "echo kept > kept.md")
        try cluster.waitFor("a sent kept.md") { try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 1 }
        a.unmount()
        let secondToken = cluster.directory.file("token2")
        try cluster.server.addAccount("alice", tokenPath: secondToken)
        cluster.server.stop()

        // Offline: the server has not been asked about the new token yet.
        try a.mount(extraArguments: ["--token-file", secondToken])
        _ = try cluster.shell(a, "echo offline > offline.md")
        // The status says so once the mount has tried (not at once: the try comes after the save).
        try cluster.waitFor("a's status says the server cannot be reached") {
            (a.text(".notesfs/status") ?? "").contains("cannot reach the server")
        }
        try cluster.server.start()
        let synced = try cluster.notesfs(["sync", "--wait", "--data", a.dataDirectory])
        #expect(synced.status == 0, "\(synced.standardOutput) \(synced.standardError)")
        try cluster.waitFor("a sent offline.md") { try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 2 }
        let secondID = try Self.tokenID(secondToken)
        #expect(try Self.binding(a).token == secondID)
    }
}
