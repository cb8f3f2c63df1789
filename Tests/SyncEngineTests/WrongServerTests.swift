import Foundation
import TestSupport
import Testing

/// A real mount pointed at a wrong URL path (the real server answers 404) and
/// at a port where no server listens: the notes wait, pending and under their
/// own names, status says what is wrong, and once the URL is fixed they
/// arrive with no `(not synced)` copy anywhere (docs/sync.md "When the server says no").
@Suite(.serialized) struct WrongServerTests {
    static func notSyncedCopies(_ mount: MountFixture) -> [String] {
        mount.tree().keys.filter { $0.contains("(not synced)") }.sorted()
    }

    @Test func notesWrittenWhileTheURLIsWrongArriveOnceItIsFixed() throws {
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let b = cluster.mounts[0]
        // Notes made offline first, so the first run of the wrong mount pushes them.
        let a = try MountFixture(mount: false)
        cluster.mounts.append(a)
        try a.mount()
        _ = try cluster.shell(a, "mkdir -p Work && echo first > one.md && echo second > Work/two.md")
        a.unmount()

        let wrongPath = cluster.server.url + "/notes-wrong"
        try a.mount(extraArguments: ["--server", wrongPath, "--token-file", cluster.tokenPath, "--device-name", "a"])
        try cluster.waitFor("status names the 404 and asks about the URL") {
            let status = SyncCluster.text(a, ".notesfs/status") ?? ""
            return status.contains("answered 404") && status.contains("is the URL right?")
                && status.contains(wrongPath)
        }
        // Past the first retry, which settled every change as refused before.
        try cluster.waitFor("a second failed run") {
            (try String(contentsOfFile: a.logPath, encoding: .utf8))
                .components(separatedBy: "answered 404").count > 2
        }
        #expect(Self.notSyncedCopies(a).isEmpty)
        #expect(SyncCluster.text(a, "one.md") == "first\n")
        #expect(extendedAttribute(a.mountpoint + "/one.md", "user.notesfs.state") == "pending")
        a.unmount()

        // A port where nothing listens (the discard port).
        try a.mount(extraArguments: ["--server", "http://127.0.0.1:9"])
        _ = try cluster.shell(a, "echo third > three.md")
        try cluster.waitFor("status says the server cannot be reached") {
            (SyncCluster.text(a, ".notesfs/status") ?? "").contains("cannot reach the server")
        }
        #expect(Self.notSyncedCopies(a).isEmpty)
        a.unmount()

        try a.mount(extraArguments: ["--server", cluster.server.url])
        try cluster.waitFor("b has every note a wrote") {
            SyncCluster.text(b, "one.md") == "first\n" && SyncCluster.text(b, "Work/two.md") == "second\n"
                && SyncCluster.text(b, "three.md") == "third\n"
        }
        try cluster.waitFor("a has nothing pending") { a.hasNothingPending }
        #expect(Self.notSyncedCopies(a).isEmpty)
        #expect(Self.notSyncedCopies(b).isEmpty)
        #expect(SyncCluster.names(b).sorted() == ["Work", "one.md", "three.md"])
    }
}
