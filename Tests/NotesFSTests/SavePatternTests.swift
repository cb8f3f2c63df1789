import Foundation
import TestSupport
import Testing
@testable import NotesStore

/// One way of changing a note with a real tool, and what the store must hold after.
struct SaveCase: Sendable, CustomTestStringConvertible {
    var name: String
    /// Runs in the mount; `$OUT` is a directory outside it.
    var script: String
    /// Live notes afterwards: path → bytes.
    var expected: [String: String]
    /// Paths whose note id must be the seeded id of `/note.md`.
    var keepsID: String?
    /// True when the note is meant to be deleted (a tombstone is expected).
    var deletes = false

    var testDescription: String { name }
}

let original = "line one\nline two\n"
let other = "other note\n"

let saveCases: [SaveCase] = [
    SaveCase(name: "echo >", script: "echo hi > note.md", expected: ["/note.md": "hi\n", "/dir/other.md": other],
             keepsID: "/note.md"),
    SaveCase(name: "echo >>", script: "echo three >> note.md",
             expected: ["/note.md": original + "three\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "dd conv=notrunc", script: "printf XY | dd of=note.md bs=1 seek=5 conv=notrunc status=none",
             expected: ["/note.md": "line XYe\nline two\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "truncate", script: "truncate -s 4 note.md",
             expected: ["/note.md": "line", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "sed -i", script: "sed -i s/one/ONE/ note.md",
             expected: ["/note.md": "line ONE\nline two\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "vim (Debian defaults)",
             script: "TERM=dumb timeout 120 vim -c 'normal Ahello' -c wq note.md </dev/null >/dev/null 2>&1",
             expected: ["/note.md": "line onehello\nline two\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "vim backupcopy=no",
             script: "TERM=dumb timeout 120 vim -c 'set backupcopy=no' -c 'normal Ahello' -c wq note.md </dev/null >/dev/null 2>&1",
             expected: ["/note.md": "line onehello\nline two\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "python os.replace",
             script: """
                 python3 -c "import os,tempfile; fd,p=tempfile.mkstemp(dir='.'); os.write(fd,b'new\\n'); os.fsync(fd); os.close(fd); os.replace(p,'note.md')"
                 """,
             expected: ["/note.md": "new\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "python .tmp then os.replace",
             script: """
                 python3 -c "import os; open('.note.md.tmp','w').write('tmp\\n'); os.replace('.note.md.tmp','note.md')"
                 """,
             expected: ["/note.md": "tmp\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "cp over", script: "printf 'copied\\n' > \"$OUT/src.md\" && cp \"$OUT/src.md\" note.md",
             expected: ["/note.md": "copied\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "rsync -a into", script: "printf 'synced\\n' > \"$OUT/note.md\" && rsync -a \"$OUT/note.md\" ./",
             expected: ["/note.md": "synced\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "mv within a folder", script: "mv note.md renamed.md",
             expected: ["/renamed.md": original, "/dir/other.md": other], keepsID: "/renamed.md"),
    SaveCase(name: "mv across folders", script: "mv note.md dir/ && mkdir -p new/deep && mv dir/note.md new/deep/",
             expected: ["/new/deep/note.md": original, "/dir/other.md": other], keepsID: "/new/deep/note.md"),
    SaveCase(name: "rm", script: "rm note.md", expected: ["/dir/other.md": other], deletes: true),
    SaveCase(name: "mkdir -p and rmdir", script: "mkdir -p a/b/c && rmdir a/b/c a/b a && test ! -e a",
             expected: ["/note.md": original, "/dir/other.md": other]),
    SaveCase(name: "mv into a hidden directory and back",
             script: "mkdir .hidden && mv note.md .hidden/ && test ! -e note.md && mv .hidden/note.md .",
             expected: ["/note.md": original, "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "cp --remove-destination (unlink, create)",
             script: "printf 'replaced\\n' > \"$OUT/src.md\" && cp --remove-destination \"$OUT/src.md\" note.md",
             expected: ["/note.md": "replaced\n", "/dir/other.md": other], keepsID: "/note.md"),
    SaveCase(name: "backup name and back (vim's rename dance)",
             script: "mv note.md note.md~ && printf 'rewritten\\n' > note.md && rm note.md~",
             expected: ["/note.md": "rewritten\n", "/dir/other.md": other], keepsID: "/note.md"),
]

@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct SavePatternTests {
    /// Seeds `/note.md` and `/dir/other.md` with `seed`, runs the save in a
    /// real mount, checks the id through getfattr, unmounts; returns the
    /// seeded ids and what the database holds after.
    func run(_ save: SaveCase, seed: (String, [(folder: [String], title: String, body: String)]) throws -> [String: String])
        throws -> (seeded: [String: String], snapshot: StoreSnapshot)
    {
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        let seeded = try seed(
            fixture.databasePath,
            [(folder: [], title: "note.md", body: original), (folder: ["dir"], title: "other.md", body: other)])
        let outside = fixture.directory.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try fixture.mount()
        try fixture.sh("export OUT='\(outside)'; set -e; " + save.script)
        if let path = save.keepsID {
            #expect(try fixture.noteID(String(path.dropFirst())) == seeded["/note.md"], "id through getfattr")
        }
        fixture.unmount()
        let snapshot = try StoreSnapshot.read(fixture.databasePath)
        #expect(snapshot.notes.mapValues { String(decoding: $0, as: UTF8.self) } == save.expected)
        if let path = save.keepsID {
            #expect(snapshot.ids[path] == seeded["/note.md"], "the edited note keeps its id")
        }
        return (seeded, snapshot)
    }

    @Test(arguments: saveCases)
    func eachSaveKeepsTheNoteAndQueuesAnEdit(_ save: SaveCase) throws {
        let (seeded, snapshot) = try run(save, seed: Seed.syncedNotes)
        let noteRows = snapshot.outbox.filter { $0.kind == "note" }
        if save.deletes {
            #expect(noteRows.map(\.op) == ["delete"])
        } else {
            #expect(!snapshot.outbox.contains { $0.op == "delete" }, "no tombstone: \(snapshot.outbox)")
            #expect(noteRows.allSatisfy { $0.id == seeded["/note.md"] }, "no new note queued: \(snapshot.outbox)")
            #expect(noteRows.count <= 1)
        }
    }

    /// The same saves on notes that never reached a server (an offline
    /// folder): deleting or moving the file away first must not cost the id.
    @Test(arguments: saveCases)
    func eachSaveKeepsANeverSyncedNotesID(_ save: SaveCase) throws {
        let (seeded, snapshot) = try run(save, seed: Seed.unsyncedNotes)
        // Nothing was ever sent: no tombstone, and at most one create per note.
        #expect(!snapshot.outbox.contains { $0.op == "delete" }, "no tombstone: \(snapshot.outbox)")
        let noteRows = snapshot.outbox.filter { $0.kind == "note" }
        #expect(Set(noteRows.map(\.id)).count == noteRows.count, "one change per note: \(snapshot.outbox)")
        #expect(noteRows.allSatisfy { Set(seeded.values).contains($0.id) }, "no new note queued: \(snapshot.outbox)")
    }
}
