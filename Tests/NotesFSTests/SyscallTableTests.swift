import Foundation
import TestSupport
import Testing

/// One system call (in Python, run in a mount holding `note.md` = "abc\n" and
/// the folders `dir/sub`) and the result it must give: "ok" or an errno name.
struct SyscallCase: Sendable, CustomTestStringConvertible {
    var name: String
    var code: String
    var expected: String
    var testDescription: String { name }
}

let syscallCases: [SyscallCase] = [
    SyscallCase(name: "lookup of a missing name", code: "os.stat('missing.md')", expected: "ENOENT"),
    SyscallCase(name: "rmdir of a non-empty folder", code: "os.rmdir('dir')", expected: "ENOTEMPTY"),
    SyscallCase(name: "mkdir over an existing name", code: "os.mkdir('dir')", expected: "EEXIST"),
    SyscallCase(name: "mkdir over an existing file", code: "os.mkdir('note.md')", expected: "EEXIST"),
    SyscallCase(name: "rename of a folder into its own child", code: "os.rename('dir', 'dir/sub/dir')",
                expected: "EINVAL"),
    SyscallCase(name: "O_EXCL create of an existing name",
                code: "os.open('note.md', os.O_CREAT | os.O_EXCL | os.O_WRONLY)", expected: "EEXIST"),
    SyscallCase(name: "a name longer than 255 bytes", code: "open('x' * 256, 'w')", expected: "ENAMETOOLONG"),
    SyscallCase(name: "a name of exactly 255 bytes", code: "open('x' * 252 + '.md', 'w').write('y')", expected: "ok"),
    SyscallCase(name: "fsync on a directory",
                code: "fd = os.open('dir', os.O_RDONLY); os.fsync(fd); os.close(fd)", expected: "ok"),
    SyscallCase(name: "a hard link", code: "os.link('note.md', 'hard.md')", expected: "EPERM"),
    SyscallCase(name: "a FIFO", code: "os.mkfifo('fifo')", expected: "EPERM"),
    SyscallCase(name: "a symlink with a synced name", code: "os.symlink('note.md', 'link.md')", expected: "EPERM"),
    SyscallCase(name: "a symlink with a local-only name",
                code: "os.symlink('note.md', '.#lock'); assert os.readlink('.#lock') == 'note.md'", expected: "ok"),
    SyscallCase(name: "unlink then read through the open descriptor",
                code: """
                    fd = os.open('note.md', os.O_RDWR); os.unlink('note.md')
                    assert os.pread(fd, 10, 0) == b'abc\\n'
                    os.pwrite(fd, b'zzz', 0); os.close(fd)
                    assert not os.path.exists('note.md'), 'the note came back'
                    """, expected: "ok"),
    SyscallCase(name: "a handle on a replaced file keeps the old bytes",
                code: """
                    fd = os.open('note.md', os.O_RDONLY); open('new.md', 'w').write('new\\n'); os.rename('new.md', 'note.md')
                    assert os.pread(fd, 10, 0) == b'abc\\n'; os.close(fd)
                    assert open('note.md').read() == 'new\\n'
                    """, expected: "ok"),
    SyscallCase(name: "utimensat with UTIME_OMIT leaves mtime alone",
                code: """
                    os.utime('note.md', ns=(1, 1_500_000_000_123_456_789))
                    before = os.stat('note.md').st_mtime_ns
                    import ctypes; libc = ctypes.CDLL(None, use_errno=True)
                    class TS(ctypes.Structure): _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]
                    times = (TS * 2)(TS(5, 0), TS(0, (1 << 30) - 2))
                    assert libc.utimensat(-100, b'note.md', times, 0) == 0
                    assert os.stat('note.md').st_mtime_ns == before == 1_500_000_000_123_456_789, before
                    """, expected: "ok"),
    SyscallCase(name: "rename with RENAME_NOREPLACE over a file",
                code: """
                    open('b.md', 'w').write('b'); import ctypes; libc = ctypes.CDLL(None, use_errno=True)
                    if libc.renameat2(-100, b'b.md', -100, b'note.md', 1) != 0: raise OSError(ctypes.get_errno(), '')
                    """, expected: "EEXIST"),
    SyscallCase(name: "rename with RENAME_EXCHANGE is refused",
                code: """
                    open('b.md', 'w').write('b'); import ctypes; libc = ctypes.CDLL(None, use_errno=True)
                    if libc.renameat2(-100, b'b.md', -100, b'note.md', 2) != 0: raise OSError(ctypes.get_errno(), '')
                    """, expected: "EINVAL"),
    SyscallCase(name: "renaming a folder to a hidden name crosses the local-only line",
                code: "os.rename('dir', '.archive')", expected: "EXDEV"),
    SyscallCase(name: "a missing user xattr is ENODATA",
                code: "os.getxattr('note.md', 'user.other')", expected: "ENODATA"),
    SyscallCase(name: "security xattrs are not supported (ls then stops asking)",
                code: "os.getxattr('note.md', 'security.selinux')", expected: "ENOTSUP"),
    SyscallCase(name: "POSIX ACLs are not supported",
                code: "os.getxattr('note.md', 'system.posix_acl_access')", expected: "ENOTSUP"),
    SyscallCase(name: "setting user.notesfs.id succeeds and changes nothing",
                code: """
                    before = os.getxattr('note.md', 'user.notesfs.id'); os.setxattr('note.md', 'user.notesfs.id', b'x')
                    assert os.getxattr('note.md', 'user.notesfs.id') == before
                    assert os.getxattr('note.md', 'user.notesfs.state') == b'pending'
                    """, expected: "ok"),
    SyscallCase(name: "setting another xattr is not supported",
                code: "os.setxattr('note.md', 'user.other', b'x')", expected: "ENOTSUP"),
    SyscallCase(name: "a write past the note size limit",
                code: "fd = os.open('note.md', os.O_WRONLY); os.pwrite(fd, b'x', 16 * 1024 * 1024)", expected: "EFBIG"),
    SyscallCase(name: "chmod and chown succeed",
                code: "os.chmod('note.md', 0o600); os.chown('note.md', 0, 0); assert os.stat('note.md').st_mode & 0o777 == 0o600",
                expected: "ok"),
    SyscallCase(name: "writing into .notesfs is refused",
                code: "open('.notesfs/status', 'w')", expected: "EACCES"),
]

@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct SyscallTableTests {
    @Test(arguments: syscallCases)
    func eachCallGivesThePosixResult(_ call: SyscallCase) throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        try fixture.sh("printf 'abc\\n' > note.md && mkdir -p dir/sub")
        let indented = call.code.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
        let program = """
            import os, errno
            try:
            \(indented)
                print('ok')
            except OSError as error:
                print(errno.errorcode.get(error.errno, str(error.errno)))
            """
        let scriptPath = fixture.directory.file("call.py")
        try program.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let result = try fixture.shell("python3 '\(scriptPath)'")
        #expect(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == call.expected,
                "\(result.standardError) \(fixture.logTail())")
    }
}
