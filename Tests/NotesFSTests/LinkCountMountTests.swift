import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// Through a real mount: directory link counts as tools that trust them
/// expect, and history entries a person can find and bring back by name.
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct LinkCountMountTests {
    @Test func aDirectorysLinkCountFollowsMkdirRmdirAndRenamesIntoAndOutOfIt() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        func links(_ script: String) throws -> [String] {
            try fixture.sh(script).split(separator: "\n").map(String.init)
        }
        #expect(try links("mkdir -p a/b && echo x > a/note.md && stat -c %h . a a/b") == ["3", "3", "2"])
        #expect(try links("mkdir a/c && stat -c %h a") == ["4"])
        #expect(try links("rmdir a/c && stat -c %h a") == ["3"])
        // Renamed out of a, into d; then d (with b) into a.
        #expect(try links("mkdir d && mv a/b d/ && stat -c %h . a d") == ["4", "2", "3"])
        #expect(try links("mv d a/ && stat -c %h . a a/d") == ["3", "3", "3"])
        // Local-only directories count too (a .git).
        #expect(try links("mkdir a/.git && stat -c %h a") == ["4"])
        // What find(1) sees agrees with every count.
        let found = try fixture.sh("find . -type d | wc -l")
        #expect(found.trimmingCharacters(in: .whitespacesAndNewlines) == "5")
    }

    @Test func historyEntriesAreNamedByPathWhyAndWhenAndRestoreListsAndTakesThem() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        let listed = try fixture.sh("""
            mkdir Work && printf 'precious text\\n' > Work/todo.md && : > Work/todo.md && ls .notesfs/history
            """)
        let name = listed.trimmingCharacters(in: .newlines)
        let pattern = #/^Work∕todo \(truncated \d{4}-\d\d-\d\d \d\d\.\d\d\.\d\d #(\d+)\)\.md$/#
        let match = try #require(name.wholeMatch(of: pattern), "\(name)")
        #expect(try fixture.sh("cat '.notesfs/history/\(name)'") == "precious text\n")
        #expect(try fixture.sh("stat -c %h .notesfs .notesfs/history .notesfs/trash .notesfs/at") == "5\n2\n2\n2\n")
        guard let binary = MountFixture.binaryPath else { return }
        let restoreList = try MountFixture.run([binary, "restore", "--data", fixture.dataDirectory])
        // The listing gives each entry's number, time, reason, path and size.
        let listing = #/^#(\d+)  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  truncated  /Work/todo\.md  \(14 bytes\)\n$/#
        let entry = try #require(restoreList.standardOutput.wholeMatch(of: listing), "\(restoreList)")
        #expect(entry.1 == match.1)
        let restore = try MountFixture.run([binary, "restore", name, "--data", fixture.dataDirectory])
        #expect(restore.status == 0, "\(restore.standardError)")
        #expect(restore.standardOutput.contains("Restored entry \(match.1) into /Work/todo.md"))
        let seen = try fixture.sh(
            "for i in $(seq 1 600); do grep -q precious Work/todo.md && break; sleep 0.1; done; cat Work/todo.md")
        #expect(seen == "precious text\n")
    }
}
