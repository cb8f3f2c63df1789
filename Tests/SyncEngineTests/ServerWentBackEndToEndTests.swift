import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// A real server put back from an older copy without `notesfs server new-epoch`:
/// no note made since the copy may vanish from any machine.
@Suite struct ServerWentBackEndToEndTests {
    /// Makes old.md, copies what `files` names from the server's data
    /// directory after a clean stop, then makes newer notes and a folder;
    /// returns the copy's directory.
    func makeNotesAroundACopy(_ cluster: SyncCluster, files: [String]) throws -> String {
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(a, "echo v1 > old.md")
        try cluster.waitFor("b has old.md") { SyncCluster.text(b, "old.md") == "v1\n" }
        cluster.server.stop()
        let backup = cluster.directory.file("server-backup")
        try FileManager.default.createDirectory(atPath: backup, withIntermediateDirectories: true)
        for name in files {
            let source = (cluster.server.dataDirectory as NSString).appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: source) {
                try FileManager.default.copyItem(atPath: source, toPath: (backup as NSString).appendingPathComponent(name))
            }
        }
        try cluster.server.start()
        _ = try cluster.shell(a, "echo fresh > new.md && echo v2 > old.md && mkdir Later && echo in > Later/in.md")
        _ = try cluster.shell(b, "echo from b > b.md")
        try cluster.waitFor("both mounts hold every newer note") {
            [a, b].allSatisfy { mount in
                SyncCluster.text(mount, "new.md") == "fresh\n" && SyncCluster.text(mount, "old.md") == "v2\n"
                    && SyncCluster.text(mount, "Later/in.md") == "in\n" && SyncCluster.text(mount, "b.md") == "from b\n"
            }
        }
        return backup
    }

    /// Puts the copy's files back over the server's, with no new epoch.
    func restore(_ cluster: SyncCluster, from backup: String, files: [String]) throws {
        cluster.server.stop()
        for name in files {
            let target = (cluster.server.dataDirectory as NSString).appendingPathComponent(name)
            try? FileManager.default.removeItem(atPath: target)
            let source = (backup as NSString).appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: source) { try FileManager.default.copyItem(atPath: source, toPath: target) }
        }
        try cluster.server.start()
    }

    func expectEveryNoteEverywhere(_ cluster: SyncCluster) throws {
        let c = try cluster.addMount(name: "device2")
        try cluster.waitFor("a fresh mount gets every newer note from the restored server") {
            SyncCluster.text(c, "new.md") == "fresh\n" && SyncCluster.text(c, "old.md") == "v2\n"
                && SyncCluster.text(c, "Later/in.md") == "in\n" && SyncCluster.text(c, "b.md") == "from b\n"
        }
        for mount in cluster.mounts {
            #expect(SyncCluster.text(mount, "new.md") == "fresh\n")
            #expect(SyncCluster.text(mount, "old.md") == "v2\n")
            #expect(SyncCluster.text(mount, "Later/in.md") == "in\n")
            #expect(SyncCluster.text(mount, "b.md") == "from b\n")
            #expect(SyncCluster.names(mount).sorted() == ["Later", "b.md", "new.md", "old.md"])
        }
    }

    static let databaseFiles = ["server.sqlite", "server.sqlite-wal", "server.sqlite-shm"]

    @Test func aDatabaseRestoredWithoutNewEpochIsNoticedByTheServerAndEveryNoteComesBack() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let backup = try makeNotesAroundACopy(cluster, files: Self.databaseFiles)
        try restore(cluster, from: backup, files: Self.databaseFiles)
        let log = (try? String(contentsOfFile: cluster.server.logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("restored from an older copy, so a new epoch"), "\(log)")
        try expectEveryNoteEverywhere(cluster)
    }

    @Test func aWholeDataDirectoryRestoredWithoutNewEpochLosesNoNoteOnAnyMachine() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        // The copy holds the counter mark too, so the server cannot tell:
        // the clients see their cursors ahead of the server and send back what it lacks.
        let files = Self.databaseFiles + ["server.sqlite.counter-mark"]
        let backup = try makeNotesAroundACopy(cluster, files: files)
        try restore(cluster, from: backup, files: files)
        let log = (try? String(contentsOfFile: cluster.server.logPath, encoding: .utf8)) ?? ""
        #expect(!log.contains("new epoch"), "\(log)")
        try expectEveryNoteEverywhere(cluster)
    }
}
