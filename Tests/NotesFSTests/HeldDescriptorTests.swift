import Foundation
import TestSupport
import Testing

/// A descriptor a program keeps open on a note while editors save other
/// notes: its writes never reach another note.
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct HeldDescriptorTests {
    @Test func aDescriptorHeldAcrossAVimSaveNeverWritesIntoANoteSavedThroughATempFile() throws {
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        let seeded = try Seed.syncedNotes(
            fixture.databasePath,
            [(folder: [], title: "a.md", body: "a one\n"), (folder: [], title: "b.md", body: "b one\n")])
        try fixture.mount()
        // Open a.md O_RDWR and keep it; vim saves a.md (backup, new file,
        // unlink backup); b.md is saved through a temp file renamed over it;
        // then the held descriptor truncates and rewrites what it read.
        let script = """
            import os
            fd = os.open('a.md', os.O_RDWR)
            seen = os.read(fd, 4096)
            os.rename('a.md', 'a.md~')
            with open('a.md', 'w') as f: f.write('a one\\na two\\n')
            os.unlink('a.md~')
            with open('.b.md.tmp', 'w') as f: f.write('b one\\nb two\\n')
            os.replace('.b.md.tmp', 'b.md')
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, seen + b'from the held descriptor\\n', 0)
            except OSError as error:
                print('held descriptor:', error)
            os.close(fd)
            """
        try fixture.sh("python3 - <<'EOF'\n\(script)\nEOF")
        let b = try fixture.sh("cat b.md")
        #expect(b == "b one\nb two\n", "b.md took another note's write: \(b)")
        fixture.unmount()
        let snapshot = try StoreSnapshot.read(fixture.databasePath)
        #expect(snapshot.notes["/b.md"] == Data("b one\nb two\n".utf8))
        #expect(snapshot.ids["/b.md"] == seeded["/b.md"])
        #expect(snapshot.ids["/a.md"] == seeded["/a.md"])
    }
}
