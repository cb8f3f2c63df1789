import Foundation
import NotesModel
import TestSupport
import Testing
@testable import NotesStore

@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct LocalOnlyAndHistoryTests {
    @Test func vimsSwapFileExistsWhileVimRunsAndNeverReachesTheOutbox() throws {
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        _ = try Seed.syncedNotes(fixture.databasePath, [(folder: [], title: "note.md", body: "text\n")])
        try fixture.mount()
        // vim stays until the listing is taken (a flag file outside the
        // mount), however slowly a loaded machine runs the shell.
        let flag = NSTemporaryDirectory() + "notesfs-vim-flag-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: flag) }
        let seen = try fixture.sh("""
            (TERM=dumb timeout 120 vim -c 'while !filereadable("\(flag)") | sleep 50m | endwhile' -c q note.md </dev/null >/dev/null 2>&1 &)
            for i in $(seq 1 1200); do [ -e .note.md.swp ] && break; sleep 0.05; done
            ls -a
            touch '\(flag)'
            for i in $(seq 1 2400); do [ -e .note.md.swp ] || break; sleep 0.05; done
            """)
        #expect(seen.contains(".note.md.swp"))
        fixture.unmount()
        let snapshot = try StoreSnapshot.read(fixture.databasePath)
        #expect(snapshot.outbox.isEmpty, "\(snapshot.outbox)")
    }

    @Test func aGitRepositoryInsideTheMountWorksAndAddsNothingToTheOutbox() throws {
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        _ = try Seed.syncedNotes(fixture.databasePath, [(folder: [], title: "note.md", body: "text\n")])
        try fixture.mount()
        let log = try fixture.sh("""
            export HOME="$PWD/.home" GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
            git init -q . && git add note.md && git commit -qm first && git log --oneline && git status --short
            """)
        #expect(log.contains("first"))
        let listing = try fixture.sh("ls")
        #expect(listing == "note.md\n")
        fixture.unmount()
        let snapshot = try StoreSnapshot.read(fixture.databasePath)
        #expect(snapshot.outbox.isEmpty, "\(snapshot.outbox)")
        #expect(snapshot.notes.keys.sorted() == ["/note.md"])
        #expect(snapshot.localEntryCount > 10)
    }

    @Test func aTruncationKeepsTheOldBytesInTheHistoryAndRestoreBringsThemBack() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("printf 'precious text\\n' > note.md && : > note.md && test ! -s note.md")
        let history = try fixture.sh("ls .notesfs/history/ && cat .notesfs/history/*")
        #expect(history.contains("precious text"))
        let listed = try fixture.sh("ls .notesfs && ls -a | grep -c notesfs || true")
        #expect(listed.contains("status.json"))
        #expect(listed.hasSuffix("0\n"), "readdir hides .notesfs")
        let seq = try fixture.sh("ls .notesfs/history/ | head -1 | sed -E 's/.*#([0-9]+)\\).*/\\1/'").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let binary = MountFixture.binaryPath else { return }
        // Restored from another process while mounted: the mount notices and
        // drops the kernel's cached pages within about half a second.
        let restore = try MountFixture.run([binary, "restore", seq, "--data", fixture.dataDirectory])
        #expect(restore.status == 0, "\(restore.standardError)")
        let seen = try fixture.sh("for i in $(seq 1 600); do grep -q precious note.md && break; sleep 0.1; done; cat note.md")
        #expect(seen == "precious text\n")
        fixture.unmount()
        let snapshot = try StoreSnapshot.read(fixture.databasePath)
        #expect(snapshot.notes["/note.md"].map { String(decoding: $0, as: UTF8.self) } == "precious text\n")
    }

    @Test func theControlFilesAnswer() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        let out = try fixture.sh("echo x > a.md && cat .notesfs/status && cat .notesfs/status.json && cat .notesfs/pending")
        #expect(out.contains("Offline notes folder: 1 note in 0 folders"), "\(out)")
        #expect(out.contains("\"notes\" : 1"))
        #expect(out.contains("/a.md"))
    }

    @Test func aControlFileReadAgainShowsWhatChangedInBetween() throws {
        // Files are opened without open requests and their pages kept: a
        // generated file must still never be served from stale pages.
        let fixture = try MountFixture()
        defer { fixture.remove() }
        let first = try fixture.sh("echo x > a.md && cat .notesfs/pending")
        #expect(first.contains("/a.md"))
        #expect(!first.contains("/b.md"))
        let second = try fixture.sh("echo y > b.md && cat .notesfs/pending")
        #expect(second.contains("/a.md"))
        #expect(second.contains("/b.md"))
    }

    @Test func tenThousandNotesListFindAndGrep() throws {
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        try TreeGenerator.generate(databasePath: fixture.databasePath, folders: 100, notesPerFolder: 100, seed: 7)
        try fixture.mount()
        let counts = try fixture.sh("""
            ls -R | grep -c '\\.md$'; find . -type f | wc -l; find . -type d | wc -l
            grep -rl 'needle-0042' . | wc -l; grep -r 'common' . | wc -l
            """)
        #expect(counts.split(separator: "\n") == ["10000", "10000", "101", "1", "10000"])
    }
}

/// Fills a store with `folders × notesPerFolder` notes, deterministically.
enum TreeGenerator {
    static func generate(databasePath: String, folders: Int, notesPerFolder: Int, seed: UInt64) throws {
        let store = try NotesStoreOpener.open(databasePath)
        var random = SplitMix64(seed: seed)
        for folder in 0..<folders {
            let directory = try store.makeFolders(path: [String(format: "folder-%03d", folder)])
            for note in 0..<notesPerFolder {
                let index = folder * notesPerFolder + note
                let body = "note \(index) common words \(random.next() % 1000)\nneedle-\(String(format: "%04d", index))\n"
                try store.createNote(in: directory, title: String(format: "note-%05d.md", index), body: Data(body.utf8))
            }
        }
    }
}
