import Foundation
import NotesModel
import TestSupport
import Testing

/// `.notesfs/at/<moment>/`, `notesfs log` and `notesfs show` on real mounts
/// syncing through a real server: the tree of a past moment from the
/// server's history, and from this machine's records once the server is gone.
@Suite(.serialized, .enabled(if: MountFixture.shouldRun)) struct MomentsEndToEndTests {
    /// Notes made on a and synced, the moment T taken and a copy of the tree
    /// made then, and changes on both machines after T: plan.md rewritten on
    /// a, gone.md deleted on b, new.md made on b, todo.md renamed on a.
    static func treeChangedAfterAMoment(_ cluster: SyncCluster) throws -> (moment: Date, copy: String) {
        let (a, b) = (cluster.mounts[0], cluster.mounts[1])
        _ = try cluster.shell(
            a,
            "mkdir Work && printf 'old line\\nsecond line\\n' > Work/plan.md && printf 'doomed\\n' > Work/gone.md "
                + "&& printf 'keep\\n' > todo.md")
        try cluster.waitFor("b has a's notes") { SyncCluster.text(b, "Work/gone.md") == "doomed\n" }
        try cluster.waitFor("nothing is left to send") { a.hasNothingPending && b.hasNothingPending }
        usleep(1_100_000)
        let moment = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let copy = cluster.directory.file("then")
        _ = try cluster.shell(a, "cp -r . '\(copy)'")
        usleep(1_100_000)
        _ = try cluster.shell(a, "printf 'new text\\n' > Work/plan.md && mv todo.md renamed.md")
        _ = try cluster.shell(b, "rm Work/gone.md && printf 'added after\\n' > new.md")
        try cluster.waitFor("a has b's changes and b has a's") {
            SyncCluster.text(a, "new.md") == "added after\n" && SyncCluster.text(b, "Work/plan.md") == "new text\n"
                && SyncCluster.text(b, "renamed.md") == "keep\n" && SyncCluster.text(a, "Work/gone.md") == nil
        }
        try cluster.waitFor("nothing is left to send") { a.hasNothingPending && b.hasNothingPending }
        return (moment, copy)
    }

    @Test func aMomentShowsTheTreeOfThenReadOnlyFromTheServerAndFromThisMachineOffline() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        let (moment, copy) = try Self.treeChangedAfterAMoment(cluster)
        let at = ".notesfs/at/" + MomentTime.name(moment)

        #expect(SyncCluster.text(a, at + "/Work/plan.md") == "old line\nsecond line\n")
        #expect(SyncCluster.text(a, at + "/Work/gone.md") == "doomed\n")
        #expect(SyncCluster.names(a, at).sorted() == ["Work", "todo.md"])
        let diff = try a.shell("diff -r '\(copy)' '\(at)'")
        #expect(diff.status == 0 && diff.standardOutput.isEmpty, "\(diff.standardOutput)\(diff.standardError)")
        let grep = try a.shell("grep -r 'old line' '\(at)'")
        #expect(grep.standardOutput == "\(at)/Work/plan.md:old line\n", "\(grep.standardError)")
        let copied = cluster.directory.file("copied")
        #expect(try a.shell("cp -r '\(at)' '\(copied)'").status == 0)
        #expect((try? String(contentsOfFile: copied + "/Work/gone.md", encoding: .utf8)) == "doomed\n")
        #expect(try a.shell("ls -lR '\(at)'").standardOutput.contains("plan.md"))

        for change in [
            "printf x > '\(at)/Work/plan.md'", "printf x >> '\(at)/todo.md'", "touch '\(at)/made.md'",
            "mkdir '\(at)/Dir'", "rm '\(at)/todo.md'", "mv '\(at)/todo.md' '\(at)/moved.md'", "mv '\(at)/todo.md' .",
            "mv renamed.md '\(at)/'", "rm -r '\(at)/Work'", "truncate -s 0 '\(at)/todo.md'", "chmod 600 '\(at)/todo.md'",
            "mkdir .notesfs/at/Dir", "touch .notesfs/at/README", "rm .notesfs/at/README",
        ] {
            let result = try a.shell(change)
            #expect(result.status != 0, "\(change) succeeded")
            #expect(
                result.standardError.contains("Read-only file system")
                    || result.standardError.contains("Permission denied"), "\(change): \(result.standardError)")
        }
        #expect(SyncCluster.text(a, "Work/plan.md") == "new text\n")
        #expect(SyncCluster.text(a, "renamed.md") == "keep\n")
        #expect(SyncCluster.text(a, at + "/todo.md") == "keep\n")
        #expect(SyncCluster.names(a, ".notesfs/at") == ["README"])
        #expect(try a.shell("ls .notesfs/at/yesterday").status != 0)
        #expect(try a.shell("ls .notesfs/at/2026-02-30").status != 0)
        let readme = SyncCluster.text(a, ".notesfs/at/README") ?? ""
        #expect(readme.contains("\(MomentTime.name(moment)) (") && readme.contains("from the server's history"), "\(readme)")

        // Offline: a moment a second later (nothing changed in between)
        // comes from a's own records, at once.
        cluster.server.stop()
        let offline = ".notesfs/at/" + MomentTime.name(moment.addingTimeInterval(1))
        #expect(SyncCluster.text(a, offline + "/Work/plan.md") == "old line\nsecond line\n")
        #expect(SyncCluster.text(a, offline + "/Work/gone.md") == "doomed\n")
        #expect(SyncCluster.text(a, offline + "/new.md") == nil)
        #expect(try a.shell("grep -r 'old line' '\(offline)'").status == 0)
        #expect(try a.shell("printf x > '\(offline)/Work/plan.md'").status != 0)
        let offlineReadme = SyncCluster.text(a, ".notesfs/at/README") ?? ""
        #expect(offlineReadme.contains("OFFLINE") && offlineReadme.contains("may be incomplete"), "\(offlineReadme)")
        // The moment from the server is still served from memory.
        #expect(SyncCluster.text(a, at + "/Work/plan.md") == "old line\nsecond line\n")
    }

    /// The server lists a moment's tree without text; each note's text is
    /// fetched when first opened, the rest in the background once several
    /// were opened, and a text the server cannot send is EIO with a log line.
    @Test func aMomentsTextsAreFetchedAsOpenedWithTheListedSizesAndAFailedFetchIsEIO() throws {
        let cluster = try SyncCluster(mounts: 1)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        // 26 notes in two folders: 0 bytes and up, accented text, bytes that are not UTF-8.
        _ = try cluster.shell(
            a,
            "mkdir Work Home && for i in $(seq 1 12); do printf 'é%.0s' $(seq 1 $((i * 37))) > Work/w$i.md; "
                + "printf 'home %s ✓\\n' $i > Home/h$i.md; done && : > Work/empty.md && printf '\\377\\376\\000A' > Work/raw.md")
        try cluster.waitFor("nothing is left to send") { a.hasNothingPending }
        usleep(1_100_000)
        let moment = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let copy = cluster.directory.file("then")
        _ = try cluster.shell(a, "cp -r . '\(copy)'")
        usleep(1_100_000)
        _ = try cluster.shell(a, "printf 'changed\\n' > Work/w3.md && rm Home/h2.md")
        try cluster.waitFor("nothing is left to send") { a.hasNothingPending }
        let at = ".notesfs/at/" + MomentTime.name(moment)

        // Sizes from the listing alone, before any text was fetched.
        let sizes = "find . -type f -printf '%s %P\\n' | sort"
        let listed = try a.shell("cd '\(at)' && \(sizes)")
        let copied = try a.shell("cd '\(copy)' && \(sizes)")
        #expect(listed.status == 0 && listed.standardOutput == copied.standardOutput, "\(listed.standardOutput)")
        #expect(listed.standardOutput.contains("0 Work/empty.md") && listed.standardOutput.contains("444 Work/w6.md")
            && listed.standardOutput.contains("4 Work/raw.md"))
        let readme = SyncCluster.text(a, ".notesfs/at/README") ?? ""
        #expect(readme.contains("fetched as they are opened (0 so far)"), "\(readme)")
        #expect(SyncCluster.text(a, at + "/Home/h2.md") == "home 2 ✓\n")
        #expect(SyncCluster.text(a, ".notesfs/at/README")?.contains("(1 so far)") == true)
        // Seven more opened: the other 18 texts come in the background, none of them opened.
        #expect(try a.shell("cd '\(at)/Home' && cat h1.md h3.md h4.md h5.md h6.md h7.md h8.md").status == 0)
        try cluster.waitFor("the other texts fetched in the background") {
            SyncCluster.text(a, ".notesfs/at/README")?.contains("(26 so far)") == true
        }
        let diff = try a.shell("diff -r '\(copy)' '\(at)'")
        #expect(diff.status == 0 && diff.standardOutput.isEmpty, "\(diff.standardOutput)\(diff.standardError)")
        #expect(try a.shell("grep -rl '✓' '\(at)' | wc -l").standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "12")

        // Another moment listed while the server answers, read after it stopped.
        let later = ".notesfs/at/" + MomentTime.name(moment.addingTimeInterval(1))
        #expect(try a.shell("ls -lR '\(later)'").standardOutput.contains("w3.md"))
        cluster.server.stop()
        let failed = try a.shell("cat '\(later)/Work/w3.md'")
        #expect(failed.status != 0 && failed.standardError.contains("Input/output error"), "\(failed.standardError)")
        #expect(a.logTail().contains("moments: cannot read"), "\(a.logTail())")
        #expect(try a.shell("stat -c %s '\(later)/Work/w3.md'").standardOutput == "222\n")
    }

    @Test func logListsANotesVersionsAndShowPrintsOneOnlineAndOffline() throws {
        let cluster = try SyncCluster(mounts: 2)
        defer { cluster.remove() }
        let a = cluster.mounts[0]
        let (moment, _) = try Self.treeChangedAfterAMoment(cluster)
        let data = ["--data", a.dataDirectory]

        let log = try cluster.notesfs(["log", a.mountpoint + "/Work/plan.md"] + data)
        #expect(log.status == 0, "\(log.standardError)")
        let lines = log.standardOutput.split(separator: "\n")
        #expect(lines.first == "/Work/plan.md: 2 versions on the server, newest first", "\(log.standardOutput)")
        #expect(lines.count == 3)
        #expect(lines.dropFirst().first?.hasSuffix("this machine  9 bytes  +1 -2") == true, "\(log.standardOutput)")
        #expect(lines.last?.hasSuffix("this machine  21 bytes  +2 -0") == true, "\(log.standardOutput)")

        let deleted = try cluster.notesfs(["log", "Work/gone.md"] + data)
        #expect(deleted.status == 0, "\(deleted.standardError)")
        #expect(deleted.standardOutput.split(separator: "\n").dropFirst().first?.hasSuffix("  deleted") == true)
        // b deleted it, and told the server its name (`--device-name device1`).
        #expect(deleted.standardOutput.contains("  device1  deleted"), "b deleted it: \(deleted.standardOutput)")

        let name = MomentTime.name(moment)
        let show = try cluster.notesfs(["show", "Work/plan.md@" + name] + data)
        #expect(show.status == 0 && show.standardOutput == "old line\nsecond line\n", "\(show.standardError)")
        let gone = try cluster.notesfs(["show", "Work/gone.md@" + name] + data)
        #expect(gone.standardOutput == "doomed\n", "\(gone.standardError)")
        let renamedThen = try cluster.notesfs(["show", "/todo.md@" + name] + data)
        #expect(renamedThen.standardOutput == "keep\n", "\(renamedThen.standardError)")
        let before = try cluster.notesfs(["show", "Work/plan.md@2020-01-01"] + data)
        #expect(before.status == 1 && before.standardError.contains("did not exist yet"), "\(before.standardError)")
        let afterDeletion = try cluster.notesfs(["show", "Work/gone.md@" + MomentTime.name(Date().addingTimeInterval(1))] + data)
        #expect(afterDeletion.status == 1 && afterDeletion.standardError.contains("deleted"), "\(afterDeletion.standardError)")
        let badTime = try cluster.notesfs(["show", "Work/plan.md@13:10"] + data)
        #expect(badTime.status == 2 && badTime.standardError.contains("YYYY-MM-DD"), "\(badTime.standardError)")
        let noNote = try cluster.notesfs(["log", "nothing.md"] + data)
        #expect(noNote.status == 1 && noNote.standardError.contains("no note is at /nothing.md"), "\(noNote.standardError)")

        cluster.server.stop()
        let offlineLog = try cluster.notesfs(["log", "Work/plan.md"] + data)
        #expect(offlineLog.status == 0 && offlineLog.standardError.contains("Offline: the server could not be asked"),
                "\(offlineLog.standardError)")
        #expect(offlineLog.standardOutput.contains("now  9 bytes  +1 -2"), "\(offlineLog.standardOutput)")
        #expect(offlineLog.standardOutput.contains("21 bytes, kept (truncated)  (oldest known here)"), "\(offlineLog.standardOutput)")
        let offlineShow = try cluster.notesfs(["show", "Work/plan.md@" + name] + data)
        #expect(offlineShow.standardOutput == "old line\nsecond line\n", "\(offlineShow.standardError)")
        #expect(offlineShow.standardError.contains("this machine's view only"))
    }
}
