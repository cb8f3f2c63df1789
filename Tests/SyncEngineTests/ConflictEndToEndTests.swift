import Foundation
import TestSupport
import Testing

/// Merges and conflict copies with a real `notesfs serve` and two real
/// mounts: appends made on both machines offline merge with no copy; a second
/// clash on the same note updates the one copy; `notesfs conflicts` lists it
/// with a diff and `conflicts resolve` settles it on both machines.
@Suite(.serialized, .enabled(if: MountFixture.shouldRun)) struct ConflictEndToEndTests {
    static func write(_ mount: MountFixture, _ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: mount.mountpoint + "/" + name))
    }

    /// `n.md` with `start` on both mounts, synced.
    static func sharedNote(_ cluster: SyncCluster, _ start: String) throws {
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        try write(a, "n.md", start)
        try cluster.waitFor("b has the note") { SyncCluster.text(b, "n.md") == start }
        try cluster.waitFor("a synced it") { a.hasNothingPending }
    }

    /// Edits `n.md` on b with the server down and b then unmounted (its edit
    /// waits in its database), then on a with the server back, so a's edit
    /// reaches the server first; then b mounts again and meets the conflict.
    /// The order is fixed, so b's is the side that loses a clash every time.
    static func clash(_ cluster: SyncCluster, a aText: String, b bText: String) throws {
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        cluster.server.stop()
        try write(b, "n.md", bText)
        b.unmount()
        try write(a, "n.md", aText)
        try cluster.server.start()
        try cluster.waitFor("a's edit reached the server") { a.hasNothingPending }
        try b.mount(extraArguments: [])
        try cluster.waitFor("b synced") { b.hasNothingPending }
    }

    @Test func appendsOnBothMachinesWhileOfflineMergeWithNoCopy() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        try Self.sharedNote(cluster, "journal\n")
        cluster.server.stop()
        _ = try cluster.shell(a, "echo 'from a' >> n.md && echo 'a again' >> n.md")
        _ = try cluster.shell(b, "echo 'from b' >> n.md")
        try cluster.server.start()
        for mount in [a, b] {
            try cluster.waitFor("both appends on \(mount.mountpoint)") {
                let text = SyncCluster.text(mount, "n.md") ?? ""
                return text.contains("from a\na again\n") && text.contains("from b\n")
            }
        }
        try cluster.waitFor("both mounts agree") {
            SyncCluster.text(a, "n.md") == SyncCluster.text(b, "n.md") && a.hasNothingPending && b.hasNothingPending
        }
        let text = try #require(SyncCluster.text(a, "n.md"))
        // The server's side (whoever pushed first) comes first, then the other; nothing twice.
        #expect(text == "journal\nfrom a\na again\nfrom b\n" || text == "journal\nfrom b\nfrom a\na again\n")
        #expect(SyncCluster.names(a) == ["n.md"])
        #expect(SyncCluster.names(b) == ["n.md"])
    }

    @Test func editsToNeighbouringLinesOnTwoOfflineMachinesMerge() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        try Self.sharedNote(cluster, "one\r\ntwo\r\nthree\r\n")
        try Self.clash(cluster, a: "ONE\r\ntwo\r\nthree\r\n", b: "one\r\nTWO\r\nthree\r\n")
        for mount in cluster.mounts {
            try cluster.waitFor("the merge on \(mount.mountpoint)") {
                SyncCluster.text(mount, "n.md") == "ONE\r\nTWO\r\nthree\r\n"
            }
            #expect(SyncCluster.names(mount) == ["n.md"])
        }
    }

    @Test func aSecondClashOnTheSameNoteUpdatesTheOneCopyAndResolveSettlesIt() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        try Self.sharedNote(cluster, "one\ntwo\nthree\n")
        try Self.clash(cluster, a: "one\na1\nthree\n", b: "one\nb1\nthree\n")
        var copyName = ""
        for mount in [a, b] {
            try cluster.waitFor("one note and one copy on \(mount.mountpoint)") {
                let names = SyncCluster.names(mount)
                guard names.count == 2, let copy = names.first(where: { $0 != "n.md" }) else { return false }
                copyName = copy
                return SyncCluster.text(mount, "n.md") == "one\na1\nthree\n"
                    && SyncCluster.text(mount, copy) == "one\nb1\nthree\n"
            }
        }
        #expect(copyName.hasPrefix("n (conflicted copy device1 "))
        try Self.clash(cluster, a: "one\na2\nthree\n", b: "one\nb2\nthree\n")
        for mount in [a, b] {
            try cluster.waitFor("still one copy, holding both clashes, on \(mount.mountpoint)") {
                SyncCluster.names(mount) == ["n.md", copyName].sorted()
                    && SyncCluster.text(mount, "n.md") == "one\na2\nthree\n"
                    && SyncCluster.text(mount, copyName) == "one\nb1\nb2\nthree\n"
            }
        }
        #expect(extendedAttribute(a.mountpoint + "/" + copyName, "user.notesfs.state") == "conflict-copy")
        #expect((SyncCluster.text(a, ".notesfs/conflicts") ?? "").contains("/\(copyName)\n  copy of /n.md\n"))
        #expect((SyncCluster.text(a, ".notesfs/status") ?? "").contains("notesfs conflicts resolve PATH"))

        // notesfs conflicts: each copy with its note and a unified diff.
        let listing = try cluster.notesfs(["conflicts", "--data", a.dataDirectory])
        #expect(listing.status == 0, "\(listing.standardError)")
        #expect(listing.standardOutput.contains("Conflict copy: /\(copyName)\n  copy of: /n.md\n"))
        #expect(listing.standardOutput.contains("--- n.md\n+++ \(copyName)\n@@ -1,3 +1,4 @@\n one\n-a2\n+b1\n+b2\n three\n"))
        let json = try cluster.notesfs(["conflicts", "--json", "--data", b.dataDirectory])
        #expect(json.standardOutput.contains("\"note\" : \"/n.md\""))

        // Usage errors say so and change nothing.
        let noKeep = try cluster.notesfs(["conflicts", "resolve", a.mountpoint + "/" + copyName, "--data", a.dataDirectory])
        #expect(noKeep.status == 2)
        let badKeep = try cluster.notesfs(
            ["conflicts", "resolve", a.mountpoint + "/" + copyName, "--keep", "mine", "--data", a.dataDirectory])
        #expect(badKeep.status == 2)
        let notACopy = try cluster.notesfs(
            ["conflicts", "resolve", a.mountpoint + "/n.md", "--keep", "copy", "--data", a.dataDirectory])
        #expect(notACopy.status == 1)

        // Resolved on a, by the copy's file in the mount: settled on both machines.
        let resolve = try cluster.notesfs(
            ["conflicts", "resolve", a.mountpoint + "/" + copyName, "--keep", "both", "--data", a.dataDirectory])
        #expect(resolve.status == 0, "\(resolve.standardError)")
        for mount in [a, b] {
            try cluster.waitFor("resolved on \(mount.mountpoint)") {
                SyncCluster.names(mount) == ["n.md"] && SyncCluster.text(mount, "n.md") == "one\na2\nthree\nb1\nb2\n"
            }
        }
        let after = try cluster.notesfs(["conflicts", "--data", b.dataDirectory])
        #expect(after.standardOutput.contains("No conflict copies."))
        #expect((SyncCluster.text(b, ".notesfs/conflicts") ?? "") == "No conflict copies.\n")
    }

    @Test func resolvingByTheListedPathKeepsTheCopysTextEverywhere() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        try Self.sharedNote(cluster, "one\ntwo\nthree\n")
        try Self.clash(cluster, a: "one\na1\nthree\n", b: "one\nb1\nthree\n")
        var copyName = ""
        try cluster.waitFor("the copy is on a") {
            guard let copy = SyncCluster.names(a).first(where: { $0 != "n.md" }) else { return false }
            copyName = copy
            return true
        }
        // On b (where the copy was made), by the path 'notesfs conflicts' lists.
        let resolve = try cluster.notesfs(
            ["conflicts", "resolve", "/" + copyName, "--keep", "copy", "--data", b.dataDirectory])
        #expect(resolve.status == 0, "\(resolve.standardError)")
        for mount in [a, b] {
            try cluster.waitFor("the copy's text is the note on \(mount.mountpoint)") {
                SyncCluster.names(mount) == ["n.md"] && SyncCluster.text(mount, "n.md") == "one\nb1\nthree\n"
            }
        }
    }
}
