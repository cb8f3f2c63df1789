import Foundation
import TestSupport
import Testing

/// Through a real mount: atime, mtime and ctime as POSIX keeps them, a
/// directory's times when its entries change, the link count of an unlinked
/// open file, and chown.
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct TimesMountTests {
    /// Runs a Python program in the mount; it prints "ok" when its asserts hold.
    func python(_ fixture: MountFixture, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let program = """
            import os, time, errno, subprocess
            OLD = 10**18  # 2001-09-09, far before anything this test does
            def stat(path):
                return os.stat(path, follow_symlinks=False)
            \(code)
            print('ok')
            """
        let scriptPath = fixture.directory.file("times-\(UUID().uuidString.prefix(8)).py")
        try program.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let result = try fixture.shell("python3 '\(scriptPath)'")
        #expect(
            result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "ok",
            "\(result.standardOutput)\(result.standardError)\n\(fixture.logTail())", sourceLocation: sourceLocation)
    }

    @Test func aDirectorysMtimeAndCtimeMoveWhenAnEntryIsCreatedRemovedOrRenamedInIt() throws {
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        _ = try Seed.syncedNotes(
            fixture.databasePath,
            [(folder: ["Work"], title: "plan.md", body: "text\n"), (folder: ["Other"], title: "x.md", body: "x\n")])
        try fixture.mount()
        defer { fixture.unmount() }
        try python(
            fixture,
            """
            os.mkdir('.stash')
            directories = ['.', 'Work', 'Other', '.stash']
            def check(action, changed):
                for path in directories:
                    os.utime(path, ns=(OLD, OLD))
                before = {path: stat(path).st_ctime_ns for path in directories}
                started = time.time_ns()
                action()
                for path in directories:
                    s = stat(path)
                    if path in changed:
                        assert s.st_mtime_ns >= started, (path, 'mtime', s.st_mtime_ns, started)
                        assert s.st_ctime_ns >= started, (path, 'ctime', s.st_ctime_ns, started)
                    else:
                        assert s.st_mtime_ns == OLD, (path, 'mtime moved', s.st_mtime_ns)
                        assert s.st_ctime_ns == before[path], (path, 'ctime moved')
            check(lambda: open('Work/new.md', 'w').write('x'), ['Work'])
            check(lambda: os.unlink('Work/new.md'), ['Work'])
            check(lambda: os.rename('Work/plan.md', 'Other/plan.md'), ['Work', 'Other'])
            check(lambda: os.rename('Other/plan.md', 'Other/renamed.md'), ['Other'])
            check(lambda: os.mkdir('Other/sub'), ['Other'])
            check(lambda: os.rmdir('Other/sub'), ['Other'])
            check(lambda: open('root.md', 'w').close(), ['.'])
            check(lambda: open('.stash/scratch', 'w').close(), ['.stash'])
            check(lambda: os.rename('.stash/scratch', 'Work/kept.md'), ['.stash', 'Work'])
            # The renamed file's own ctime moved; its mtime did not.
            os.utime('Work/kept.md', ns=(OLD, OLD))
            started = time.time_ns()
            os.rename('Work/kept.md', 'Work/moved.md')
            s = stat('Work/moved.md')
            assert s.st_mtime_ns == OLD and s.st_ctime_ns >= started, (s.st_mtime_ns, s.st_ctime_ns, started)
            """)
        fixture.unmount()
        // The folders' new times are this machine's own: no folder change was queued.
        let outbox = try StoreSnapshot.read(fixture.databasePath).outbox
        #expect(!outbox.contains { $0.kind == "folder" }, "\(outbox)")
    }

    /// The mount answers folder attributes from memory; a local-only
    /// directory coming or going must still move its parent's link count, and
    /// a local-only file must not.
    @Test func aFoldersLinkCountFollowsLocalOnlyDirectoriesButNotFiles() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("mkdir Work Other")
        try python(
            fixture,
            """
            def links(path):
                return stat(path).st_nlink
            work, other = links('Work'), links('Other')
            os.mkdir('Work/.git')
            assert links('Work') == work + 1, ('mkdir', links('Work'), work)
            for i in range(3):
                with open('Work/.save.tmp', 'w') as f:
                    f.write('x')
                os.rename('Work/.save.tmp', 'Work/.kept%d' % i)
                assert links('Work') == work + 1, ('local file', links('Work'), work)
            os.rename('Work/.git', 'Other/.git')
            assert links('Work') == work and links('Other') == other + 1, (links('Work'), links('Other'))
            os.rmdir('Other/.git')
            assert links('Other') == other, ('rmdir', links('Other'), other)
            """)
    }

    @Test func touchDashAAndTouchDashMEachChangeOnlyTheirOwnTime() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("printf 'text\\n' > note.md && mkdir Work")
        try python(
            fixture,
            """
            for path in ['note.md', 'Work', '.']:
                os.utime(path, ns=(OLD, OLD))
                subprocess.run(['touch', '-a', '-d', '@2000000000', path], check=True)
                s = stat(path)
                assert s.st_atime_ns == 2000000000 * 10**9, (path, 'atime', s.st_atime_ns)
                assert s.st_mtime_ns == OLD, (path, 'touch -a moved the mtime', s.st_mtime_ns)
                subprocess.run(['touch', '-m', '-d', '@1500000000', path], check=True)
                s = stat(path)
                assert s.st_mtime_ns == 1500000000 * 10**9, (path, 'mtime', s.st_mtime_ns)
                assert s.st_atime_ns == 2000000000 * 10**9, (path, 'touch -m moved the atime', s.st_atime_ns)
                started = time.time_ns()
                subprocess.run(['touch', '-a', path], check=True)
                s = stat(path)
                assert s.st_atime_ns >= started and s.st_mtime_ns == 1500000000 * 10**9, (path, s)
                assert s.st_ctime_ns >= started, (path, 'ctime', s.st_ctime_ns, started)
            # Reading does not move the atime (noatime: the kernel sends nothing for it).
            atime = stat('note.md').st_atime_ns
            open('note.md').read()
            assert stat('note.md').st_atime_ns == atime
            """)
        // Kept in the database: the same after a remount.
        let before = try fixture.sh("stat -c '%X %Y' note.md Work .")
        fixture.unmount()
        try fixture.mount()
        #expect(try fixture.sh("stat -c '%X %Y' note.md Work .") == before)
    }

    @Test func ctimeMovesForwardOnlyWhateverTheMtimeIsSetTo() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("printf 'text\\n' > note.md")
        try python(
            fixture,
            """
            last = stat('note.md').st_ctime_ns
            def forward(what):
                global last
                c = stat('note.md').st_ctime_ns
                assert c >= last, (what, 'ctime went back', c, last)
                last = c
            started = time.time_ns()
            subprocess.run(['touch', '-d', '@1000000000', 'note.md'], check=True)
            s = stat('note.md')
            assert s.st_mtime_ns == 10**18 and s.st_ctime_ns >= started, ('touch -d past', s)
            forward('touch -d past')
            subprocess.run(['touch', '-d', '@4000000000', 'note.md'], check=True)
            s = stat('note.md')
            # The ctime is when the change happened, not the future mtime.
            assert s.st_mtime_ns == 4 * 10**18 and started <= s.st_ctime_ns < 4 * 10**18, ('touch -d future', s)
            forward('touch -d future')
            subprocess.run(['touch', '-d', '@1000000000', 'note.md'], check=True)
            forward('touch -d past again')
            started = time.time_ns()
            with open('note.md', 'a') as f: f.write('more\\n')
            s = stat('note.md')
            assert s.st_ctime_ns >= started and s.st_mtime_ns >= started, ('write', s)
            forward('write')
            started = time.time_ns()
            os.chmod('note.md', 0o600)
            assert stat('note.md').st_ctime_ns >= started, 'chmod'
            forward('chmod')
            started = time.time_ns()
            os.truncate('note.md', 2)
            assert stat('note.md').st_ctime_ns >= started, 'truncate'
            forward('truncate')
            # rsync's way: a temporary file with an old mtime renamed over the note.
            open('.note.md.tmp', 'w').write('new\\n')
            os.utime('.note.md.tmp', ns=(OLD, OLD))
            started = time.time_ns()
            os.rename('.note.md.tmp', 'note.md')
            s = stat('note.md')
            assert s.st_mtime_ns == OLD and s.st_ctime_ns >= started, ('rename-over', s)
            forward('rename-over')
            """)
    }

    @Test func anUnlinkedFileStillOpenHasNoLinks() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("printf 'text\\n' > note.md && printf 'x\\n' > other.md")
        try python(
            fixture,
            """
            fd = os.open('note.md', os.O_RDWR)
            assert os.fstat(fd).st_nlink == 1
            os.unlink('note.md')
            assert os.fstat(fd).st_nlink == 0, os.fstat(fd).st_nlink
            assert os.pread(fd, 10, 0) == b'text\\n'
            os.close(fd)
            # Replaced by a rename: the replaced file is unlinked too.
            fd = os.open('other.md', os.O_RDONLY)
            open('new.md', 'w').write('y\\n')
            os.rename('new.md', 'other.md')
            assert os.fstat(fd).st_nlink == 0, os.fstat(fd).st_nlink
            assert stat('other.md').st_nlink == 1
            os.close(fd)
            """)
    }

    @Test func chownToAnotherOwnerFailsAndOneThatChangesNothingSucceeds() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("printf 'text\\n' > note.md && mkdir Work")
        try python(
            fixture,
            """
            uid, gid = os.getuid(), os.getgid()
            for path in ['note.md', 'Work']:
                for owner in [(uid + 1, -1), (-1, gid + 1), (uid + 1, gid + 1)]:
                    try:
                        os.chown(path, *owner)
                        assert False, (path, owner, 'chown succeeded')
                    except PermissionError as error:
                        assert error.errno == errno.EPERM, error
                    s = stat(path)
                    assert (s.st_uid, s.st_gid) == (uid, gid)
                started = time.time_ns()
                os.chown(path, uid, gid)
                os.chown(path, -1, -1)
                s = stat(path)
                assert (s.st_uid, s.st_gid) == (uid, gid) and s.st_ctime_ns >= started, (path, s)
            subprocess.run(['chown', f'{uid}:{gid}', 'note.md'], check=True)
            failed = subprocess.run(['chown', f'{uid + 1}', 'note.md'], capture_output=True)
            assert failed.returncode != 0 and b'Operation not permitted' in failed.stderr, failed
            """)
    }
}
