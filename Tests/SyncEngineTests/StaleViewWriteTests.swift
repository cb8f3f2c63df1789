import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// Writes made through a view of a note that a pull has since changed: an
/// append lands at the note's real end, and a write at an offset the writer
/// computed before the pull is merged with the pulled text, never written
/// over it. Two real mounts and a real server; the second mount's kernel
/// holds the note's old size when the pulled change lands.
@Suite(.serialized, .enabled(if: MountFixture.shouldRun)) struct StaleViewWriteTests {
    /// Both mounts show `n.md` as `start`, synced; returns the version b's store holds.
    func sharedNote(_ cluster: SyncCluster, _ start: String) throws -> Int {
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        try Data(start.utf8).write(to: URL(fileURLWithPath: a.mountpoint + "/n.md"))
        try cluster.waitFor("b has the note") { SyncCluster.text(b, "n.md") == start }
        try cluster.waitFor("a synced it") { a.hasNothingPending }
        return try #require(try storedVersion(b))
    }

    /// The server version of `n.md` in `mount`'s database, read from the
    /// file: nothing asks the mount's kernel about the note (a stat would
    /// teach it the new size, which is what these tests must avoid).
    func storedVersion(_ mount: MountFixture) throws -> Int? {
        let query = """
            import sqlite3, sys
            db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
            row = db.execute("SELECT server_version FROM notes WHERE title = 'n.md' AND deleted = 0").fetchone()
            print(row[0] if row and row[0] is not None else "")
            """
        let result = try MountFixture.run(["python3", "-c", query, mount.databasePath])
        return Int(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Waits until `mount` shows `text` at `n.md`; the failure says what it shows instead.
    func waitForText(_ cluster: SyncCluster, _ mount: MountFixture, _ text: String) throws {
        do {
            try cluster.waitFor("n.md reads \(text.debugDescription)") { SyncCluster.text(mount, "n.md") == text }
        } catch {
            let shown = SyncCluster.names(mount).map { "\($0): \((SyncCluster.text(mount, $0) ?? "?").debugDescription)" }
            Issue.record("\(mount.mountpoint) shows \(shown)")
            throw error
        }
    }

    /// Waits until b's store holds a newer version than `version`.
    func waitForPull(_ cluster: SyncCluster, past version: Int) throws {
        let b = cluster.mounts[1]
        try cluster.waitFor("b pulled a's change") { (try storedVersion(b) ?? version) > version }
    }

    @Test func anAppendThroughADescriptorOpenedBeforeAPullLandsAtTheNotesEnd() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        let version = try sharedNote(cluster, "base\n")
        // b opens for appending (its kernel learns size 5), then a's line
        // arrives, then b appends through the same descriptor.
        let script = """
            exec 3>>n.md
            echo opened > \(b.mountpoint)/../b-opened
            while [ ! -e \(b.mountpoint)/../b-go ]; do sleep 0.01; done
            echo B >&3
            exec 3>&-
            """
        let appender = try SpawnedProcess.background(["/bin/bash", "-c", script], in: b.mountpoint)
        defer { appender.kill() }
        try cluster.waitFor("b's descriptor is open") { FileManager.default.fileExists(atPath: b.mountpoint + "/../b-opened") }
        _ = try cluster.shell(a, "echo A >> n.md")
        try waitForPull(cluster, past: version)
        #expect(FileManager.default.createFile(atPath: b.mountpoint + "/../b-go", contents: nil))
        #expect(appender.wait(seconds: 60) == 0)
        for mount in [a, b] {
            try waitForText(cluster, mount, "base\nA\nB\n")
        }
        #expect(SyncCluster.names(a) == ["n.md"], "no conflict copy for two appends")
    }

    @Test func aWriteAtAnOffsetTakenBeforeAPullNeverOverwritesThePulledText() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        let version = try sharedNote(cluster, "one\ntwo\n")
        // b's writer learns the size (fstat), a's edit arrives, then b writes
        // its line where it believes the end is: over a's line, byte for byte.
        let script = """
            import os, sys, time
            fd = os.open("n.md", os.O_WRONLY)
            end = os.fstat(fd).st_size
            open("../b-opened", "w").close()
            while not os.path.exists("../b-go"): time.sleep(0.01)
            os.pwrite(fd, b"B-line\\n", end)
            os.close(fd)
            """
        let writer = try SpawnedProcess.background(["python3", "-c", script], in: b.mountpoint)
        defer { writer.kill() }
        try cluster.waitFor("b's writer has the size") { FileManager.default.fileExists(atPath: b.mountpoint + "/../b-opened") }
        _ = try cluster.shell(a, "echo A-line >> n.md")
        try waitForPull(cluster, past: version)
        #expect(FileManager.default.createFile(atPath: b.mountpoint + "/../b-go", contents: nil))
        #expect(writer.wait(seconds: 60) == 0)
        // Two lines added at the same place merge, or (with a merge that
        // keeps such clashes apart) the writer's text becomes a conflict
        // copy; either way the note keeps a's line and nothing is lost.
        for mount in [a, b] {
            try cluster.waitFor("every line on \(mount.mountpoint)") {
                let lines = SyncCluster.names(mount).flatMap { (SyncCluster.text(mount, $0) ?? "").split(separator: "\n") }
                return Set(lines) == ["one", "two", "A-line", "B-line"]
                    && (SyncCluster.text(mount, "n.md") ?? "").contains("A-line\n")
            }
        }
        try cluster.waitFor("both mounts show the same files") {
            SyncCluster.names(a) == SyncCluster.names(b)
                && SyncCluster.names(a).allSatisfy { SyncCluster.text(a, $0) == SyncCluster.text(b, $0) }
        }
    }

    @Test func aWriteAtTheEndLearnedAfterAPullIsNotSplicedIntoTextAnotherProgramReadBefore() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        let version = try sharedNote(cluster, "a\nb\nc\n")
        // A program on b reads the note (an editor holding it); then a
        // removes a line, and b's kernel learns the shorter size.
        _ = try b.checkedShell("cat n.md > /dev/null")
        _ = try cluster.shell(a, "printf 'a\\nc\\n' > n.md")
        try waitForPull(cluster, past: version)
        try cluster.waitFor("b's kernel knows the new size") {
            (try? FileManager.default.attributesOfItem(atPath: b.mountpoint + "/n.md")[.size] as? Int) == 4
        }
        // Another program learns that size, and writes its line there after
        // one more pull.
        let script = """
            import os, time
            fd = os.open("n.md", os.O_WRONLY)
            end = os.fstat(fd).st_size
            open("../b-end", "w").write(str(end))
            while not os.path.exists("../b-go"): time.sleep(0.01)
            os.pwrite(fd, b"mine\\n", end)
            os.close(fd)
            """
        let writer = try SpawnedProcess.background(["python3", "-c", script], in: b.mountpoint)
        defer { writer.kill() }
        try cluster.waitFor("b's writer has the size") { FileManager.default.fileExists(atPath: b.mountpoint + "/../b-end") }
        let pulled = try #require(try storedVersion(b))
        _ = try cluster.shell(a, "echo d >> n.md")
        try waitForPull(cluster, past: pulled)
        #expect(FileManager.default.createFile(atPath: b.mountpoint + "/../b-go", contents: nil))
        #expect(writer.wait(seconds: 60) == 0)
        #expect(try String(contentsOfFile: b.mountpoint + "/../b-end", encoding: .utf8) == "4")
        // The line is added where the writer meant it, after "c": merged with
        // "d", or kept apart in a conflict copy; no line comes back or goes.
        for mount in [a, b] {
            try cluster.waitFor("every line once on \(mount.mountpoint)") {
                let lines = SyncCluster.names(mount).flatMap { (SyncCluster.text(mount, $0) ?? "").split(separator: "\n") }
                return Set(lines) == ["a", "c", "d", "mine"] && (SyncCluster.text(mount, "n.md") ?? "").hasPrefix("a\nc\n")
                    && (SyncCluster.text(mount, "n.md") ?? "").contains("d\n")
            }
        }
    }

    @Test func aRewriteOfWhatWasReadBeforeTheKernelLearnedOfAPullKeepsThePulledLines() throws {
        // b's invalidations are held 3 s (as a busy machine can): after the
        // pull, its kernel keeps the old size that long.
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let b = try cluster.addMount(name: "device1", environment: ["NOTESFS_INVALIDATION_DELAY_MS": "3000"])
        let a = cluster.mounts[0]
        let version = try sharedNote(cluster, "1\n2\n3\n")
        Thread.sleep(forTimeInterval: 3.5)  // every invalidation so far has reached b's kernel
        // b's kernel learns the size (6 bytes, valid 10 s) and drops the pages.
        let forget = """
            import os
            fd = os.open("n.md", os.O_RDONLY)
            os.fstat(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
            """
        _ = try b.checkedShell("python3 -c '\(forget)'")
        _ = try cluster.shell(a, "printf '0\\n1\\n2\\n3\\n' > n.md")
        try waitForPull(cluster, past: version)
        // Before the invalidation arrives, a program reads the note and
        // rewrites it with one more line.
        let rewrite = """
            import os
            seen = open("n.md", "rb").read()
            open("../b-seen", "wb").write(seen)
            fd = os.open("n.md", os.O_RDWR)
            os.ftruncate(fd, 0)
            os.pwrite(fd, seen + b"B\\n", 0)
            os.close(fd)
            """
        _ = try b.checkedShell("python3 -c '\(rewrite)'")
        let seen = try String(contentsOfFile: b.mountpoint + "/../b-seen", encoding: .utf8)
        #expect(seen == "1\n2\n3\n", "the program reads the text whose size its kernel holds, never the new one cut short")
        for mount in [a, b] {
            try waitForText(cluster, mount, "0\n1\n2\n3\nB\n")
        }
        #expect(SyncCluster.names(a) == ["n.md"], "no conflict copy")
    }

    @Test func aRewriteThroughAStaleViewThatClashesKeepsBothTexts() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        let version = try sharedNote(cluster, "one\ntwo\nthree\n")
        // b's writer truncates and rewrites the note from what it saw, after
        // a changed the same line: the clash becomes a conflict copy.
        let script = """
            import os, time
            fd = os.open("n.md", os.O_WRONLY)
            os.fstat(fd)
            open("../b-opened", "w").close()
            while not os.path.exists("../b-go"): time.sleep(0.01)
            os.ftruncate(fd, 0)
            os.pwrite(fd, b"one\\nTWO-b\\nthree\\n", 0)
            os.close(fd)
            """
        let writer = try SpawnedProcess.background(["python3", "-c", script], in: b.mountpoint)
        defer { writer.kill() }
        try cluster.waitFor("b's writer has the size") { FileManager.default.fileExists(atPath: b.mountpoint + "/../b-opened") }
        _ = try cluster.shell(a, "printf 'one\\nTWO-a\\nthree\\n' > n.md")
        try waitForPull(cluster, past: version)
        #expect(FileManager.default.createFile(atPath: b.mountpoint + "/../b-go", contents: nil))
        #expect(writer.wait(seconds: 60) == 0)
        for mount in [a, b] {
            try cluster.waitFor("the note and one copy on \(mount.mountpoint)") {
                let names = SyncCluster.names(mount)
                let texts = Set(names.compactMap { SyncCluster.text(mount, $0) })
                return names.count == 2 && texts == ["one\nTWO-a\nthree\n", "one\nTWO-b\nthree\n"]
            }
        }
        #expect(SyncCluster.text(a, "n.md") == "one\nTWO-a\nthree\n", "the note keeps the text b had not seen")
    }
}
