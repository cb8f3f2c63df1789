import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// `notesfs revert` on one machine of two: the folder goes back to a past
/// moment on both, the rest stays, and the revert itself is undone by
/// reverting to the moment it printed.
@Suite(.serialized, .enabled(if: MountFixture.shouldRun)) struct RevertEndToEndTests {
    static func localTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone.current
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        return formatter.string(from: date)
    }

    @Test func aFolderRevertedOnOneMachineIsAsItWasOnBothAndTheRevertCanBeUndone() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(a, "mkdir Work && printf 'one\\n' > Work/plan.md && printf 'keep\\n' > Work/keep.md && printf 'root\\n' > todo.md")
        try cluster.waitFor("b has the notes") { SyncCluster.text(b, "Work/keep.md") == "keep\n" && SyncCluster.text(b, "todo.md") == "root\n" }
        try cluster.waitFor("a sent everything") { a.hasNothingPending }
        let keepID = try #require(extendedAttribute(b.mountpoint + "/Work/keep.md", "user.notesfs.id"))
        Thread.sleep(forTimeInterval: 1.1)
        let moment = Self.localTime(Date())
        Thread.sleep(forTimeInterval: 1.1)

        _ = try cluster.shell(b, "printf 'two\\n' > Work/plan.md && rm Work/keep.md && printf 'new\\n' > Work/new.md")
        _ = try cluster.shell(a, "printf 'root two\\n' > todo.md")
        try cluster.waitFor("a has b's changes") {
            SyncCluster.text(a, "Work/plan.md") == "two\n" && SyncCluster.names(a, "Work") == ["new.md", "plan.md"]
        }
        try cluster.waitFor("both sent everything") { a.hasNothingPending && b.hasNothingPending }

        let plan = try cluster.notesfs(["revert", "--to", moment, "Work", "--data", a.dataDirectory])
        #expect(plan.status == 1, "without a terminal and without --yes it asks, so it changes nothing")
        #expect(plan.standardOutput.contains("restore  Work/keep.md"), "\(plan.standardOutput)")
        #expect(plan.standardError.contains("add --yes"), "\(plan.standardError)")
        #expect(SyncCluster.text(a, "Work/plan.md") == "two\n")

        let revert = try cluster.notesfs(["revert", "--to", moment, "Work", "--yes", "--data", a.dataDirectory])
        #expect(revert.status == 0, "\(revert.standardError)")
        let output = revert.standardOutput
        #expect(output.contains("change   Work/plan.md (+1 -1 lines)"), "\(output)")
        #expect(output.contains("delete   Work/new.md (to the trash)"), "\(output)")
        for mount in [a, b] {
            try cluster.waitFor("\(mount.mountpoint) shows Work as it was") {
                SyncCluster.text(mount, "Work/plan.md") == "one\n" && SyncCluster.text(mount, "Work/keep.md") == "keep\n"
                    && SyncCluster.names(mount, "Work") == ["keep.md", "plan.md"]
            }
            #expect(SyncCluster.text(mount, "todo.md") == "root two\n", "outside the path nothing went back")
            #expect(extendedAttribute(mount.mountpoint + "/Work/keep.md", "user.notesfs.id") == keepID, "the same note")
        }
        try cluster.waitFor("the note made later is in b's trash") { SyncCluster.text(b, ".notesfs/trash/Work/new.md") == "new\n" }

        // A moment before anything existed would only delete: refused.
        let empty = try cluster.notesfs(["revert", "--to", "2020-01-01", "--yes", "--data", a.dataDirectory])
        #expect(empty.status == 1 && empty.standardError.contains("would only delete"), "\(empty.standardError)")
        #expect(SyncCluster.text(a, "Work/plan.md") == "one\n")

        // Undo, as the command said.
        let undoLine = try #require(output.split(separator: "\n").first { $0.hasPrefix("To undo: ") })
        let undoTime = try #require(undoLine.split(separator: "'").dropFirst().first.map(String.init))
        try cluster.waitFor("both sent everything") { a.hasNothingPending && b.hasNothingPending }
        Thread.sleep(forTimeInterval: 1.1)
        let undo = try cluster.notesfs(["revert", "--to", undoTime, "Work", "--yes", "--data", b.dataDirectory])
        #expect(undo.status == 0, "\(undo.standardError)")
        for mount in [a, b] {
            try cluster.waitFor("\(mount.mountpoint) shows Work as before the revert") {
                SyncCluster.text(mount, "Work/plan.md") == "two\n" && SyncCluster.names(mount, "Work") == ["new.md", "plan.md"]
            }
        }
    }

    @Test func aProfileWithoutAServerSaysWhereItsOwnHistoryIs() throws {
        let mount = try MountFixture()
        defer { mount.remove() }
        let result = try MountFixture.run(
            [try #require(MountFixture.binaryPath), "revert", "--to", "2026-01-01", "--data", mount.dataDirectory])
        #expect(result.status == 1)
        #expect(result.standardError.contains("has no server") && result.standardError.contains("notesfs trash"))
        let badTime = try MountFixture.run(
            [try #require(MountFixture.binaryPath), "revert", "--to", "yesterday", "--data", mount.dataDirectory])
        #expect(badTime.status == 2 && badTime.standardError.contains("2026-12-03T13:10"), "\(badTime.standardError)")
    }
}
