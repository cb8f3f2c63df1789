import Foundation
import TestSupport
import Testing

/// Every committed change wakes the engine, whatever process made it: a real
/// `notesfs import` run against the profile of a running mount commits from
/// another process, and the mount sends it with no other trigger.
@Suite(.serialized) struct ExternalCommitTests {
    @Test func notesImportedByAnotherProcessWhileMountedReachTheServerBySelf() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(a, "echo hello > start.md")
        try cluster.waitFor("both mounts synced once") { SyncCluster.text(b, "start.md") == "hello\n" }

        let source = cluster.directory.file("to-import")
        try FileManager.default.createDirectory(atPath: source + "/Trip", withIntermediateDirectories: true)
        for index in 0..<20 {
            try Data("imported \(index)\n".utf8).write(to: URL(fileURLWithPath: source + "/Trip/n\(index).md"))
        }
        let imported = try cluster.notesfs(["import", source, "--data", a.dataDirectory])
        #expect(imported.status == 0, "\(imported.standardError)")
        // The long poll only wakes a mount for the server's changes, the
        // debounce only for this process's own commits: without the watch,
        // nothing sends these (an empty long poll only polls again).
        try cluster.waitFor("b shows every imported note", seconds: 60) {
            (0..<20).allSatisfy { SyncCluster.text(b, "Trip/n\($0).md") == "imported \($0)\n" }
        }
        // The mount that did not make them shows them too (its kernel caches were dropped).
        #expect(SyncCluster.text(a, "Trip/n19.md") == "imported 19\n")
        try cluster.waitFor("a has nothing pending") { a.hasNothingPending }
    }
}
