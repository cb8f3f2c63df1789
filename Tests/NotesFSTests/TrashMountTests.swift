import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// `.notesfs/trash` on a real mount: a removed note is there with its last
/// text, read-only, and `mv` brings the same note back.
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct TrashMountTests {
    @Test func aRemovedNoteIsReadableInTheTrashAndMovingItOutBringsBackTheSameNote() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("mkdir Work && printf 'the plan\\n' > Work/plan.md")
        let id = try fixture.noteID("Work/plan.md")
        #expect(!id.isEmpty)
        try fixture.sh("rm Work/plan.md && test ! -e Work/plan.md")

        #expect(try fixture.sh("ls .notesfs/trash .notesfs/trash/Work") == ".notesfs/trash:\nWork\n\n.notesfs/trash/Work:\nplan.md\n")
        #expect(try fixture.sh("cat .notesfs/trash/Work/plan.md") == "the plan\n")
        #expect(try fixture.sh("stat -c '%s %A' .notesfs/trash/Work/plan.md") == "9 -r--r--r--\n")
        let refused = try fixture.shell(
            "echo more >> .notesfs/trash/Work/plan.md; rm -f .notesfs/trash/Work/plan.md; touch .notesfs/trash/new.md")
        #expect(refused.status != 0)
        #expect(try fixture.sh("cat .notesfs/trash/Work/plan.md && ls .notesfs/trash") == "the plan\nWork\n")

        // Moved out: the same note, its text, and the trash no longer has it;
        // the name resolves to the note at once (stat, xattr, read, write).
        try fixture.sh("mv .notesfs/trash/Work/plan.md Work/")
        #expect(try fixture.noteID("Work/plan.md") == id)
        #expect(try fixture.sh("cat Work/plan.md && stat -c '%s %A' Work/plan.md") == "the plan\n9 -rw-r--r--\n")
        try fixture.sh("echo again >> Work/plan.md")
        #expect(try fixture.sh("cat Work/plan.md") == "the plan\nagain\n")
        #expect(try fixture.sh("ls -A .notesfs/trash") == "")
        fixture.unmount()
        let snapshot = try StoreSnapshot.read(fixture.databasePath)
        #expect(snapshot.notes["/Work/plan.md"] == Data("the plan\nagain\n".utf8))
        #expect(snapshot.ids["/Work/plan.md"] == id)
    }

    @Test func aFolderRemovedWithItsNotesComesBackWholeWhenItsTrashFolderIsMovedOut() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("mkdir -p Work/Q1 && echo a > Work/Q1/a.md && echo b > Work/b.md")
        let ids = [try fixture.noteID("Work/Q1/a.md"), try fixture.noteID("Work/b.md")]
        try fixture.sh("rm -rf Work && test ! -e Work")
        #expect(try fixture.sh("cd .notesfs/trash && find . | sort") == ".\n./Work\n./Work/Q1\n./Work/Q1/a.md\n./Work/b.md\n")
        try fixture.sh("mv .notesfs/trash/Work .")
        #expect(try fixture.sh("cat Work/Q1/a.md Work/b.md") == "a\nb\n")
        #expect([try fixture.noteID("Work/Q1/a.md"), try fixture.noteID("Work/b.md")] == ids)
        #expect(try fixture.sh("ls -A .notesfs/trash") == "")
    }

    @Test func trashRestoreFromAnotherProcessBringsTheNoteBackIntoTheMount() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        guard let binary = MountFixture.binaryPath else { return }
        try fixture.sh("echo kept > kept.md")
        let id = try fixture.noteID("kept.md")
        try fixture.sh("rm kept.md")
        let listing = try MountFixture.run([binary, "trash", "--data", fixture.dataDirectory])
        #expect(listing.status == 0 && listing.standardOutput.contains("this machine  /kept.md  (5 bytes)\n"),
                "\(listing.standardOutput)\(listing.standardError)")
        let restore = try MountFixture.run([binary, "trash", "restore", "kept.md", "--data", fixture.dataDirectory])
        #expect(restore.status == 0 && restore.standardOutput == "Restored /kept.md.\n", "\(restore.standardError)")
        let seen = try fixture.sh("for i in $(seq 1 40); do [ -e kept.md ] && break; sleep 0.1; done; cat kept.md")
        #expect(seen == "kept\n")
        #expect(try fixture.noteID("kept.md") == id)
    }
}
