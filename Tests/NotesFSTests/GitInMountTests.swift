import Foundation
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

/// A git repository made and cloned inside the mount: `.git` is local-only,
/// its small files kept in their rows and its packs in backing files beside
/// the database.
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct GitInMountTests {
    static let gitEnvironment = """
        export HOME="$PWD/.home" GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
        """

    @Test func aRepositoryMadeAndClonedInTheMountIsCleanAndPassesFsck() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        // Made in the mount: commits, a packed history (one file written in
        // pieces), and a clone over file:// (index-pack streams the pack in).
        let out = try fixture.sh(
            Self.gitEnvironment + """

                mkdir work && cd work && git init -q .
                for i in 1 2 3; do head -c 60000 /dev/urandom | base64 > "file$i.txt"; done
                printf 'notes\\n' > README.md
                git add . && git commit -qm first
                printf 'more\\n' >> README.md && git commit -qam second
                git gc -q
                cd .. && git clone -q "file://$PWD/work" copy
                cd copy && git status --porcelain && echo status-done
                git fsck --no-progress --no-dangling && echo fsck-done
                git log --oneline | wc -l
                cmp README.md ../work/README.md && cmp file2.txt ../work/file2.txt && echo same
                """)
        #expect(out == "status-done\nfsck-done\n2\nsame\n", "\(out)")
        #expect(try fixture.sh("cd work && git status --porcelain") == "")
        fixture.unmount()

        // The packs' bytes are in backing files; small files' in their rows,
        // whole, and no row holds bytes beside a backing file.
        let db = try Connection(path: fixture.databasePath)
        let misplaced = try db.queryOne(
            """
            SELECT count(*) FROM local_entries WHERE type = 2 AND (file IS NULL AND (size > ? OR length(data) != size)
                OR file IS NOT NULL AND length(data) > 0)
            """, Int64(StoreConfiguration().localInlineBytesMax)
        ) { $0.int(0) }
        #expect(misplaced == 0)
        let backing = try FileManager.default.contentsOfDirectory(atPath: fixture.databasePath + "-local")
        let named = try db.queryOne("SELECT count(*) FROM local_entries WHERE file IS NOT NULL") { $0.int(0) }
        #expect(backing.count == named && backing.count >= 2, "\(backing.count) files, \(named ?? -1) named")

        // Still clean after a remount (the sweep kept every live file).
        try fixture.mount()
        let again = try fixture.sh(
            Self.gitEnvironment + "\ncd copy && git status --porcelain && git fsck --no-progress --no-dangling && echo ok")
        #expect(again == "ok\n")
    }

    @Test func localFileBytesWrittenAndFsyncedSurviveKillingTheDaemon() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        // A pack written in 4 KiB pieces into .git, fsynced, then a swap file
        // appended to; the daemon is killed with nothing unmounted.
        try fixture.sh("""
            head -c 1048576 /dev/urandom > ../pack.source && mkdir .git
            dd if=../pack.source of=.git/pack bs=4k conv=fsync status=none
            printf 'swap one\\n' > .note.md.swp && printf 'swap two\\n' >> .note.md.swp
            """)
        fixture.killDaemon()
        try fixture.mount()
        let check = try fixture.sh("cmp .git/pack ../pack.source && echo same && cat .note.md.swp")
        #expect(check == "same\nswap one\nswap two\n", "\(check)")
    }
}
