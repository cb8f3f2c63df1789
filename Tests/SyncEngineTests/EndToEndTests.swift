import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// A real `notesfs serve` and two or three real mounts of it, each in its own
/// temporary directory, driven with shell tools (DESIGN.md "Tests").
final class SyncCluster: @unchecked Sendable {
    // @unchecked: used by one test at a time, from one task.
    let directory: TemporaryDirectory
    let server: ServerProcess
    let tokenPath: String
    var mounts: [MountFixture] = []

    init(mounts count: Int) throws {
        directory = try TemporaryDirectory(prefix: "notesfs-e2e")
        server = ServerProcess(dataDirectory: directory.file("server"))
        tokenPath = directory.file("token")
        do {
            try server.addAccount("alice", tokenPath: tokenPath)
            try server.start()
            for index in 0..<count { try addMount(name: "device\(index)") }
        } catch {
            remove()
            throw error
        }
    }

    @discardableResult
    func addMount(name: String, tokenPath: String? = nil, environment: [String: String] = [:]) throws -> MountFixture {
        let mount = try MountFixture(mount: false)
        mounts.append(mount)
        try mount.mount(
            extraArguments: ["--server", server.url, "--token-file", tokenPath ?? self.tokenPath, "--device-name", name],
            environment: environment)
        return mount
    }

    /// Unmounts everything, stops the server (by pid) and deletes the files.
    func remove() {
        for mount in mounts { mount.remove() }
        server.stop()
        directory.remove()
    }

    func shell(_ mount: MountFixture, _ script: String) throws -> String {
        try mount.checkedShell(script)
    }

    static func text(_ mount: MountFixture, _ path: String) -> String? { mount.text(path) }

    static func names(_ mount: MountFixture, _ path: String = "") -> [String] { mount.names(path) }

    /// Polls `condition` every 20 ms; fails with `what` and the logs after `seconds`.
    func waitFor(_ what: String, seconds: Double = 60, _ condition: () throws -> Bool) throws {
        try MountFixture.waitFor(what, mounts: mounts, seconds: seconds, condition)
    }

    func notesfs(_ arguments: [String]) throws -> MountFixture.Result {
        guard let binary = MountFixture.binaryPath else { throw MountFixture.Failure("notesfs binary not found") }
        return try MountFixture.run([binary] + arguments)
    }

    /// The account's version counter on the server: how many changes it applied.
    func serverCounter() throws -> Int? {
        let listing = try notesfs(["account", "list", "--data", server.dataDirectory]).standardOutput
        guard let line = listing.split(separator: "\n").first(where: { $0.hasPrefix("alice") }) else { return nil }
        let columns = line.split(separator: " ")
        return columns.count > 3 ? Int(columns[3]) : nil
    }
}

func extendedAttribute(_ path: String, _ name: String) -> String? {
    guard let result = try? MountFixture.run(["getfattr", "--only-values", "-n", name, path]), result.status == 0 else {
        return nil
    }
    return result.standardOutput
}

func modificationTime(_ path: String) -> timespec? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mtim
}

@Suite(.serialized, .enabled(if: MountFixture.shouldRun)) struct EndToEndTests {
    @Test func createEditRenameMoveAndDeleteOnOneMountAppearOnTheOthers() throws {
        let cluster = try SyncCluster(mounts: 3)
        defer { cluster.remove() }
        let (a, b, c) = (cluster.mounts[0], cluster.mounts[1], cluster.mounts[2])
        _ = try cluster.shell(a, "mkdir Work && echo plan > Work/plan.md")
        try cluster.waitFor("the new note is on b and c") {
            SyncCluster.text(b, "Work/plan.md") == "plan\n" && SyncCluster.text(c, "Work/plan.md") == "plan\n"
        }
        #expect(extendedAttribute(b.mountpoint + "/Work/plan.md", "user.notesfs.state") == "synced")
        let before = try #require(modificationTime(c.mountpoint + "/Work/plan.md"))
        usleep(20_000)
        _ = try cluster.shell(a, "echo more >> Work/plan.md")
        try cluster.waitFor("the edit is on c") { SyncCluster.text(c, "Work/plan.md") == "plan\nmore\n" }
        let after = try #require(modificationTime(c.mountpoint + "/Work/plan.md"))
        #expect((after.tv_sec, after.tv_nsec) > (before.tv_sec, before.tv_nsec), "a pulled change moves mtime forward")
        _ = try cluster.shell(b, "mv Work/plan.md Work/done.md")
        try cluster.waitFor("the rename is on a and c") {
            SyncCluster.names(a, "Work") == ["done.md"] && SyncCluster.names(c, "Work") == ["done.md"]
        }
        _ = try cluster.shell(c, "mv Work/done.md done.md")
        try cluster.waitFor("the move is on a and b") {
            SyncCluster.text(a, "done.md") == "plan\nmore\n" && SyncCluster.names(b, "Work").isEmpty
                && SyncCluster.names(b).contains("done.md")
        }
        _ = try cluster.shell(a, "rm done.md")
        try cluster.waitFor("the delete is on b and c") {
            SyncCluster.names(b) == ["Work"] && SyncCluster.names(c) == ["Work"]
        }
    }

    @Test func aMountWithoutTheServerKeepsWorkingAndCatchesUp() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        cluster.server.stop()
        _ = try cluster.shell(a, "echo written offline > offline.md && cat offline.md")
        try cluster.waitFor("status says the server cannot be reached") {
            (SyncCluster.text(a, ".notesfs/status") ?? "").contains("cannot reach the server")
        }
        #expect(extendedAttribute(a.mountpoint + "/offline.md", "user.notesfs.state") == "pending")
        try cluster.server.start()
        try cluster.waitFor("b caught up") { SyncCluster.text(b, "offline.md") == "written offline\n" }
        try cluster.waitFor("a has nothing pending") {
            a.hasNothingPending
        }
    }

    /// Writes `n.md` on both mounts while the server is down, then restarts it.
    func offlineEdits(_ cluster: SyncCluster, start: String, a: String, b: String) throws {
        let (ma, mb) = (cluster.mounts[0], cluster.mounts[1])
        try Data(start.utf8).write(to: URL(fileURLWithPath: ma.mountpoint + "/n.md"))
        try cluster.waitFor("b has the note") { SyncCluster.text(mb, "n.md") == start }
        try cluster.waitFor("a synced it") { ma.hasNothingPending }
        cluster.server.stop()
        if !a.isEmpty { try Data(a.utf8).write(to: URL(fileURLWithPath: ma.mountpoint + "/n.md")) }
        if b.isEmpty {
            _ = try cluster.shell(mb, "rm n.md")
        } else {
            try Data(b.utf8).write(to: URL(fileURLWithPath: mb.mountpoint + "/n.md"))
        }
        try cluster.server.start()
    }

    @Test func editsToDifferentLinesOnTwoOfflineMountsMerge() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        try offlineEdits(
            cluster, start: "one\ntwo\nthree\nfour\n", a: "ONE\ntwo\nthree\nfour\n", b: "one\ntwo\nthree\nFOUR\n")
        for mount in cluster.mounts {
            try cluster.waitFor("both lines merged") { SyncCluster.text(mount, "n.md") == "ONE\ntwo\nthree\nFOUR\n" }
            #expect(SyncCluster.names(mount) == ["n.md"])
        }
    }

    @Test func editsToTheSameLineMakeOneNoteAndExactlyOneConflictCopyEverywhere() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        try offlineEdits(cluster, start: "one\ntwo\nthree\n", a: "one\nalpha\nthree\n", b: "one\nbeta\nthree\n")
        for mount in cluster.mounts {
            try cluster.waitFor("two files with one copy on \(mount.mountpoint)") {
                let names = SyncCluster.names(mount)
                return names.count == 2 && names.filter { $0.contains("conflicted copy") }.count == 1
            }
        }
        try cluster.waitFor("both mounts show the same two files with the same text") {
            let (a, b) = (cluster.mounts[0], cluster.mounts[1])
            return SyncCluster.names(a) == SyncCluster.names(b)
                && SyncCluster.names(a).allSatisfy { SyncCluster.text(a, $0) == SyncCluster.text(b, $0) }
        }
        let texts = Set(SyncCluster.names(cluster.mounts[0]).compactMap { SyncCluster.text(cluster.mounts[0], $0) })
        #expect(texts == ["one\nalpha\nthree\n", "one\nbeta\nthree\n"], "both versions survive")
    }

    @Test func anEditOnOneMountBeatsADeleteOnTheOther() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        try offlineEdits(cluster, start: "keep me\n", a: "keep me\nedited\n", b: "")
        for mount in cluster.mounts {
            try cluster.waitFor("the edited note survives") { SyncCluster.text(mount, "n.md") == "keep me\nedited\n" }
        }
    }

    @Test func aNoteAddedToAFolderDeletedElsewhereEndsInTheRoot() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(a, "mkdir Work && echo old > Work/old.md")
        try cluster.waitFor("b has the folder") { SyncCluster.text(b, "Work/old.md") == "old\n" }
        try cluster.waitFor("a synced it") { a.hasNothingPending }
        cluster.server.stop()
        _ = try cluster.shell(a, "rm -r Work")
        _ = try cluster.shell(b, "echo new > Work/new.md")
        try cluster.server.start()
        for mount in [a, b] {
            try cluster.waitFor("the new note is in the root of \(mount.mountpoint)") {
                SyncCluster.text(mount, "new.md") == "new\n" && !SyncCluster.names(mount).contains("Work")
            }
        }
    }

    @Test func aMountKilledMidPushResendsItsFrozenChangeAndEveryLineTypedSurvivesTheConflict() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        let start = "l1\nl2\nl3\nl4\nl5\n"
        try Data(start.utf8).write(to: URL(fileURLWithPath: a.mountpoint + "/n.md"))
        try cluster.waitFor("b has the note") { SyncCluster.text(b, "n.md") == start }
        try cluster.waitFor("a synced it") { a.hasNothingPending }
        cluster.server.stop()
        // The first edit is frozen and sent (the send fails: no server)…
        try Data("L1\nl2\nl3\nl4\nl5\n".utf8).write(to: URL(fileURLWithPath: a.mountpoint + "/n.md"))
        try cluster.waitFor("a tried to send the edit") {
            (try String(contentsOfFile: a.logPath, encoding: .utf8)).contains("sync failed")
        }
        // …the second is typed while the first is in flight; then the mount dies.
        try Data("L1\nL2\nl3\nl4\nl5\n".utf8).write(to: URL(fileURLWithPath: a.mountpoint + "/n.md"))
        a.killDaemon()
        try cluster.server.start()
        try Data("l1\nl2\nl3\nl4\nL5\n".utf8).write(to: URL(fileURLWithPath: b.mountpoint + "/n.md"))
        try cluster.waitFor("b's edit reached the server") {
            b.hasNothingPending
        }
        try a.mount()  // no flags: the profile remembers the server
        for mount in [a, b] {
            try cluster.waitFor("every line typed is in the note on \(mount.mountpoint)") {
                SyncCluster.text(mount, "n.md") == "L1\nL2\nl3\nl4\nL5\n"
            }
            #expect(SyncCluster.names(mount) == ["n.md"])
        }
        try cluster.waitFor("a has nothing pending") {
            a.hasNothingPending
        }
        // create, b's edit, a's merged edit: the resent change was applied at most once.
        #expect(try cluster.serverCounter() == 3)
    }

    @Test func aBatchedRmRfIsHeldBothWaysSyncWaitExitsThreeAndRestoreHeldBringsTheNotesBack() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(
            a, "mkdir -p Many/Sub && for i in $(seq 1 12); do echo note $i > Many/n$i.md; echo sub $i > Many/Sub/s$i.md; done"
                + " && echo keep > keep.md")
        try cluster.waitFor("b has every note") {
            SyncCluster.names(b, "Many").count == 13 && SyncCluster.names(b, "Many/Sub").count == 12
        }
        try cluster.waitFor("a synced them") { a.hasNothingPending }
        // rm -rf, one file at a time over about four seconds: the mount pushes many small batches meanwhile.
        _ = try cluster.shell(a, "cd Many && for f in Sub/* n*; do rm $f; sleep 0.15; done && rmdir Sub && cd .. && rmdir Many")
        let held = try cluster.notesfs(["sync", "--wait", "--data", a.dataDirectory])
        #expect(held.status == 3, "sync --wait exits 3 while deletions are held: \(held.standardError)")
        #expect(held.standardError.contains("Not sent:") && held.standardError.contains("--restore-held"))
        #expect((SyncCluster.text(a, ".notesfs/status") ?? "").contains("Deletions held"))
        let onB = try cluster.notesfs(["sync", "--wait", "--data", b.dataDirectory])
        #expect(onB.status == 0, "\(onB.standardError)")
        #expect(SyncCluster.names(b) == ["Many", "keep.md"], "nothing landed in b's root")
        // Entries shown under Many on b: the notes it kept, and Sub.
        let keptOnB = SyncCluster.names(b, "Many").count + SyncCluster.names(b, "Many/Sub").count
        #expect(keptOnB - 1 >= 12, "b keeps at least half of the 25 notes")

        // a confirms: its held deletions go out, and b holds them as they arrive.
        let confirmed = try cluster.notesfs(["sync", "--wait", "--allow-mass-delete", "--data", a.dataDirectory])
        #expect(confirmed.status == 0, "\(confirmed.standardError)")
        try cluster.waitFor("b holds the pulled deletions and says so") {
            (SyncCluster.text(b, ".notesfs/status") ?? "").contains("Not removed here: \(keptOnB - 1) notes")
        }
        let heldOnB = try cluster.notesfs(["sync", "--wait", "--data", b.dataDirectory])
        #expect(heldOnB.status == 3, "\(heldOnB.standardError)")
        #expect(SyncCluster.names(b, "Many").count + SyncCluster.names(b, "Many/Sub").count == keptOnB)

        // b cancels them: the notes it kept are pushed back, and a gets them again.
        let restored = try cluster.notesfs(["sync", "--wait", "--restore-held", "--data", b.dataDirectory])
        #expect(restored.status == 0, "\(restored.standardError)")
        #expect(restored.standardOutput.contains("Restored:"))
        try cluster.waitFor("a has the restored notes back") {
            SyncCluster.names(a, "Many") == SyncCluster.names(b, "Many")
                && SyncCluster.names(a, "Many/Sub") == SyncCluster.names(b, "Many/Sub")
        }
        #expect(SyncCluster.names(a, "Many").count + SyncCluster.names(a, "Many/Sub").count == keptOnB)
    }

    @Test func aServerRestoredFromAnOlderCopyGetsEveryNewerNoteBackAndNothingIsDeleted() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(a, "echo v1 > old.md")
        try cluster.waitFor("b has old.md") { SyncCluster.text(b, "old.md") == "v1\n" }
        cluster.server.stop()
        let backup = cluster.directory.file("server-backup")
        try FileManager.default.copyItem(atPath: cluster.server.dataDirectory, toPath: backup)
        try cluster.server.start()
        _ = try cluster.shell(a, "echo fresh > new.md && echo v2 > old.md")
        try cluster.waitFor("b has the newer notes") {
            SyncCluster.text(b, "new.md") == "fresh\n" && SyncCluster.text(b, "old.md") == "v2\n"
        }
        cluster.server.stop()
        try FileManager.default.removeItem(atPath: cluster.server.dataDirectory)
        try FileManager.default.copyItem(atPath: backup, toPath: cluster.server.dataDirectory)
        let epoch = try cluster.notesfs(["server", "new-epoch", "--data", cluster.server.dataDirectory])
        #expect(epoch.status == 0, "\(epoch.standardError)")
        try cluster.server.start()
        let c = try cluster.addMount(name: "device2")
        try cluster.waitFor("a fresh mount gets the newer notes from the restored server") {
            SyncCluster.text(c, "new.md") == "fresh\n" && SyncCluster.text(c, "old.md") == "v2\n"
        }
        for mount in [a, b] {
            #expect(SyncCluster.text(mount, "new.md") == "fresh\n")
            #expect(SyncCluster.text(mount, "old.md") == "v2\n")
        }
    }

    @Test func syncWaitReportsTheOutcomeAndAStoreOfAnotherAccountIsRefused() throws {
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        let synced = try cluster.notesfs(["sync", "--wait", "--data", a.dataDirectory])
        #expect(synced.status == 0)
        #expect(synced.standardOutput.contains("Synced."))
        a.unmount()
        let otherToken = cluster.directory.file("other-token")
        try cluster.server.addAccount("bob", tokenPath: otherToken)
        guard let binary = MountFixture.binaryPath else { return }
        let refused = try MountFixture.run([
            binary, "mount", a.mountpoint, "--data", a.dataDirectory, "--server", cluster.server.url, "--token-file",
            otherToken,
        ])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("another --profile"), "\(refused.standardError)")
        #expect(!a.isMounted)
        let notRunning = try cluster.notesfs(["sync", "--data", a.dataDirectory])
        #expect(notRunning.status == 1)
        #expect(notRunning.standardError.contains("no running mount"))
    }
}
