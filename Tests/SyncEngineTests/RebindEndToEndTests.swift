import Foundation
import TestSupport
import Testing

/// The real binary: a profile synced with one server moves to a fresh server
/// and account with `notesfs sync --rebind`.
@Suite struct RebindEndToEndTests {
    @Test func aProfileRebindsToAFreshServerAndSendsEveryNoteWithItsIdOnce() throws {
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        _ = try cluster.shell(a, "echo one > one.md && mkdir Work && echo two > Work/two.md")
        try cluster.waitFor("a sent everything") { try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 3 }
        let ids = ["one.md", "Work/two.md"].map { extendedAttribute(a.mountpoint + "/" + $0, "user.notesfs.id") }
        a.unmount()

        // The first server is lost; a fresh one with a new account replaces it.
        let second = ServerProcess(dataDirectory: cluster.directory.file("server2"))
        defer { second.stop() }
        let secondToken = cluster.directory.file("token2")
        try second.addAccount("alice-again", tokenPath: secondToken)
        try second.start()

        guard let binary = MountFixture.binaryPath else { throw MountFixture.Failure("notesfs binary not found") }
        let refused = try MountFixture.run([
            binary, "mount", a.mountpoint, "--data", a.dataDirectory, "--server", second.url, "--token-file", secondToken,
        ])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("notesfs sync --rebind"), "\(refused.standardError)")
        #expect(!a.isMounted)
        let unconfirmed = try cluster.notesfs([
            "sync", "--rebind", "--server", second.url, "--token-file", secondToken, "--data", a.dataDirectory,
        ])
        #expect(unconfirmed.status == 1)
        #expect(unconfirmed.standardError.contains("--yes"), "\(unconfirmed.standardError)")
        let rebound = try cluster.notesfs([
            "sync", "--rebind", "--yes", "--server", second.url, "--token-file", secondToken, "--data", a.dataDirectory,
        ])
        #expect(rebound.status == 0, "\(rebound.standardError)")
        #expect(rebound.standardOutput.contains("2 notes and 1 folders"), "\(rebound.standardOutput)")

        try a.mount()  // the profile remembers the new server
        try cluster.waitFor("a sent everything to the second server") { a.hasNothingPending }
        let viewer = try MountFixture(mount: false)
        defer { viewer.remove() }
        try viewer.mount(extraArguments: ["--server", second.url, "--token-file", secondToken, "--device-name", "viewer"])
        try MountFixture.waitFor("the second server's viewer has every note", mounts: [a, viewer]) {
            viewer.text("one.md") == "one\n" && viewer.text("Work/two.md") == "two\n"
        }
        #expect(viewer.names().sorted() == ["Work", "one.md"])
        #expect(viewer.names("Work") == ["two.md"])
        #expect(["one.md", "Work/two.md"].map { extendedAttribute(viewer.mountpoint + "/" + $0, "user.notesfs.id") } == ids)
        #expect(a.names().sorted() == ["Work", "one.md"])
    }

    @Test func aTokenFileNowHoldingAnotherAccountMountsOfflineAndBlocksSyncOnceTheServerAnswers() throws {
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        _ = try cluster.shell(a, "echo kept > kept.md")
        try cluster.waitFor("a sent kept.md") { try a.hasNothingPending && (cluster.serverCounter() ?? 0) >= 1 }
        // One change or two: the create and the write may travel apart.
        let sent = try cluster.serverCounter()
        a.unmount()
        // The token file now holds another account's token; the server is gone.
        try cluster.server.addAccount("bob", tokenPath: cluster.tokenPath)
        cluster.server.stop()
        try a.mount()
        #expect(a.text("kept.md") == "kept\n")
        _ = try cluster.shell(a, "echo typed > typed.md")
        try cluster.waitFor("a finds the server gone") {
            (a.text(".notesfs/status") ?? "").contains("cannot reach the server")
        }

        // The server answers: it names bob's account, so nothing moves and
        // status says why and what to do.
        try cluster.server.start()
        let blocked = try cluster.notesfs(["sync", "--wait", "--data", a.dataDirectory])
        #expect(blocked.status == 1)
        #expect(blocked.standardError.contains("sync is off"), "\(blocked.standardError)")
        let status = a.text(".notesfs/status") ?? ""
        #expect(status.contains("sync is off: the token in use belongs to another account"), "\(status)")
        #expect(status.contains("notesfs sync --rebind") && status.contains("--profile"), "\(status)")
        #expect(a.text("typed.md") == "typed\n", "the mount works on")
        #expect(try cluster.serverCounter() == sent, "nothing more reached alice's account")
        let listing = try cluster.notesfs(["account", "list", "--data", cluster.server.dataDirectory]).standardOutput
        let bob = listing.split(separator: "\n").first { $0.hasPrefix("bob ") }.map { $0.split(separator: " ") }
        #expect(bob.map { $0.count > 3 ? $0[3] : "" } == "0", "nothing reached bob's account: \(listing)")
        #expect((try? String(contentsOfFile: a.logPath, encoding: .utf8))?.contains("sync is off") == true)
    }
}
