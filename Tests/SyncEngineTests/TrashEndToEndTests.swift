import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// The trash across machines: a deletion pulled from another machine puts
/// the note in this one's trash, and restoring it here revives the same
/// note everywhere.
@Suite(.serialized, .enabled(if: MountFixture.shouldRun)) struct TrashEndToEndTests {
    @Test func aNoteDeletedOnOneMachineIsInTheOthersTrashAndRestoringItThereBringsItBackEverywhere() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(a, "mkdir Work && printf 'the plan\\n' > Work/plan.md")
        try cluster.waitFor("b has the note") { SyncCluster.text(b, "Work/plan.md") == "the plan\n" }
        _ = try cluster.shell(b, "printf 'last words\\n' >> Work/plan.md")
        try cluster.waitFor("a has b's edit") { SyncCluster.text(a, "Work/plan.md") == "the plan\nlast words\n" }
        let id = try #require(extendedAttribute(b.mountpoint + "/Work/plan.md", "user.notesfs.id"))

        _ = try cluster.shell(b, "rm -r Work")
        try cluster.waitFor("the deleted note is in a's trash with its last text") {
            SyncCluster.text(a, ".notesfs/trash/Work/plan.md") == "the plan\nlast words\n"
        }
        try cluster.waitFor("the folder is gone on a") { SyncCluster.names(a).isEmpty }
        let listing = try cluster.notesfs(["trash", "list", "--data", a.dataDirectory])
        #expect(listing.standardOutput.contains("another machine  /Work/plan.md  (20 bytes)\n"), "\(listing.standardOutput)")

        let restore = try cluster.notesfs(["trash", "restore", "Work/plan.md", "--data", a.dataDirectory])
        #expect(restore.status == 0 && restore.standardOutput == "Restored /Work/plan.md.\n", "\(restore.standardError)")
        try cluster.waitFor("b has the note back in its folder") {
            SyncCluster.text(b, "Work/plan.md") == "the plan\nlast words\n"
        }
        #expect(extendedAttribute(b.mountpoint + "/Work/plan.md", "user.notesfs.id") == id)
        #expect(extendedAttribute(a.mountpoint + "/Work/plan.md", "user.notesfs.id") == id)
        try cluster.waitFor("neither trash holds it any more") {
            SyncCluster.names(a, ".notesfs/trash").isEmpty && SyncCluster.names(b, ".notesfs/trash").isEmpty
        }
        try cluster.waitFor("nothing is left to send") { a.hasNothingPending && b.hasNothingPending }
    }
}
