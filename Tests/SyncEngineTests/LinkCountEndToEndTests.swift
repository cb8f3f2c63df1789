import Foundation
import TestSupport
import Testing

/// A folder moved on another machine moves the link counts of both its old
/// and its new parent here, through the kernel's caches.
@Suite(.serialized, .enabled(if: MountFixture.shouldRun)) struct LinkCountEndToEndTests {
    @Test func aPulledFolderMoveUpdatesBothParentsLinkCounts() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(a, "mkdir -p From/sub To && echo x > From/sub/n.md")
        try cluster.waitFor("the folders are on b") { SyncCluster.text(b, "From/sub/n.md") == "x\n" }
        func links(_ mount: MountFixture) -> String? {
            try? mount.checkedShell("stat -c %h . From To")
        }
        #expect(links(b) == "4\n3\n2\n")
        _ = try cluster.shell(a, "mv From/sub To/")
        try cluster.waitFor("the move is on b, and both parents' link counts with it") {
            SyncCluster.names(b, "To") == ["sub"] && links(b) == "4\n2\n3\n"
        }
        _ = try cluster.shell(a, "rmdir From")
        try cluster.waitFor("the pulled rmdir lowers the root's link count") { links(b) == nil }
        #expect(try cluster.shell(b, "stat -c %h . To") == "3\n3\n")
    }
}
