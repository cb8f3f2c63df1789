import Foundation
import ProcessKit

/// A small tmpfs mounted on a fresh directory, for tests of a full disk.
/// Needs root (mount); `init` returns nil otherwise, and the caller skips
/// loudly. `unmount()` it in a `defer`.
public final class SmallDisk: Sendable {
    public let path: String

    /// Mounts a tmpfs of `megabytes` MiB; nil when mounting is not allowed here.
    public init?(megabytes: Int) {
        guard getuid() == 0, let directory = try? TemporaryDirectory(prefix: "notesfs-smalldisk") else { return nil }
        path = directory.path
        guard (try? Self.run(["/usr/bin/mount", "-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0755", "tmpfs", path])) == 0
        else {
            directory.remove()
            return nil
        }
    }

    /// Free bytes left on the disk.
    public var freeBytes: Int64 {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return -1 }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// Fills the disk with a file until at most `leftBytes` are free.
    public func fill(leaving leftBytes: Int64) {
        let filler = path + "/filler"
        if !FileManager.default.fileExists(atPath: filler) {
            _ = FileManager.default.createFile(atPath: filler, contents: nil)
        }
        guard let handle = FileHandle(forWritingAtPath: filler) else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        let chunk = Data(repeating: 0x61, count: 64 * 1024)
        while freeBytes > leftBytes {
            let size = Int(min(Int64(chunk.count), max(4096, freeBytes - leftBytes)))
            do { try handle.write(contentsOf: chunk.prefix(size)) } catch { return }
        }
    }

    /// Removes the filler file made by `fill`.
    public func unfill() {
        try? FileManager.default.removeItem(atPath: path + "/filler")
    }

    /// Unmounts (lazily, so a process still holding a file cannot keep it) and removes the directory.
    public func unmount() {
        _ = try? Self.run(["/usr/bin/umount", "-l", path])
        rmdir(path)
    }

    private static func run(_ arguments: [String]) throws -> Int32 {
        let pid = try ChildProcess.spawn(arguments, .init(standardOutput: .null, standardError: .null))
        return ChildProcess.exitStatus(ChildProcess.wait(pid))
    }
}
