import Foundation
import ProcessKit

/// A real `notesfs mount` of a fresh data directory on a fresh empty directory,
/// driven through the built `notesfs` binary. Call `unmount()` in a `defer`:
/// it always leaves nothing mounted and no daemon running, even after a failure.
public final class MountFixture: @unchecked Sendable {
    public let directory: TemporaryDirectory
    public let mountpoint: String
    public let dataDirectory: String
    /// Seconds to wait for a mount or an unmount.
    public static let timeoutSeconds = 60.0

    public var databasePath: String { dataDirectory + "/notes.sqlite" }
    public var logPath: String { dataDirectory + "/mount.log" }

    /// Why mount tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        if access("/dev/fuse", R_OK | W_OK) != 0 { return "/dev/fuse is not available" }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        if !path.split(separator: ":").contains(where: { access("\($0)/fusermount3", X_OK) == 0 }) {
            return "fusermount3 is not installed"
        }
        if binaryPath == nil { return "the notesfs binary was not built (swift build --build-tests)" }
        return nil
    }

    /// True when mount tests must run (CI sets NOTESFS_REQUIRE_ALL_TESTS=1) or can run.
    public static var shouldRun: Bool {
        if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" { return true }
        if let reason = unavailableReason {
            FileHandle.standardError.write(Data("⚠️  SKIPPING mount tests: \(reason)\n".utf8))
            return false
        }
        return true
    }

    /// The `notesfs` executable next to the test bundle (or `$NOTESFS_BINARY`).
    public static var binaryPath: String? {
        if let path = ProcessInfo.processInfo.environment["NOTESFS_BINARY"] { return path }
        return builtProductPath("notesfs")
    }

    /// The executable product `name` that `swift build --build-tests` put
    /// next to the test bundle; nil when it is not there.
    public static func builtProductPath(_ name: String) -> String? {
        var candidates: [URL] = []
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        candidates.append(runner.deletingLastPathComponent().appendingPathComponent(name))
        for bundle in Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        }
        var walk = runner
        for _ in 0..<6 {
            walk = walk.deletingLastPathComponent()
            candidates.append(walk.appendingPathComponent(name))
        }
        return candidates.map(\.path).first { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && access(path, X_OK) == 0
        }
    }

    /// Makes the directories and mounts.
    public init(mount shouldMount: Bool = true) throws {
        directory = try TemporaryDirectory(prefix: "notesfs-mount")
        mountpoint = directory.file("mnt")
        dataDirectory = directory.file("data")
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        if shouldMount {
            do {
                try mount()
            } catch {
                remove()
                throw error
            }
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Runs `notesfs mount` (which returns once the mount is up).
    public func mount() throws {
        try mount(extraArguments: [])
    }

    /// Runs `notesfs mount` with more flags (`--server`, `--token-file`, …)
    /// and more environment variables for the daemon.
    public func mount(extraArguments: [String], environment: [String: String] = [:]) throws {
        guard let binary = Self.binaryPath else { throw Failure("notesfs binary not found") }
        let variables = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let command = (variables.isEmpty ? [] : ["/usr/bin/env"] + variables) + [binary]
        let result = try Self.run(command + ["mount", mountpoint, "--data", dataDirectory] + extraArguments)
        guard result.status == 0 else {
            throw Failure("notesfs mount failed (\(result.status)): \(result.standardError) \(logTail())")
        }
        guard isMounted else { throw Failure("mount not in /proc/self/mountinfo after notesfs mount") }
    }

    /// True when something is mounted on the mount point.
    public var isMounted: Bool {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        let escaped = mountpoint.replacingOccurrences(of: " ", with: "\\040")
        return text.split(separator: "\n").contains { $0.split(separator: " ").dropFirst(4).first == Substring(escaped) }
    }

    /// The daemon's pid, from the lock file.
    public var daemonPID: pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/mount.lock", encoding: .utf8) else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Unmounts cleanly; falls back to a lazy unmount and SIGKILL. Never throws.
    public func unmount() {
        let pid = daemonPID
        if isMounted, let binary = Self.binaryPath {
            _ = try? Self.run([binary, "unmount", mountpoint])
        }
        if isMounted { _ = try? Self.run(["fusermount3", "-u", "-z", mountpoint]) }
        if let pid { Self.waitForExit(pid, killAfterSeconds: Self.timeoutSeconds) }
    }

    /// SIGKILLs the daemon (a crash) and clears the dead mount.
    public func killDaemon() {
        guard let pid = daemonPID else { return }
        kill(pid, SIGKILL)
        Self.waitForExit(pid, killAfterSeconds: 5)
        if isMounted { _ = try? Self.run(["fusermount3", "-u", "-z", mountpoint]) }
    }

    /// Unmounts and deletes everything.
    public func remove() {
        unmount()
        directory.remove()
    }

    static func waitForExit(_ pid: pid_t, killAfterSeconds: Double) {
        let deadline = Date().addingTimeInterval(killAfterSeconds)
        while processAlive(pid) {
            if Date() > deadline {
                kill(pid, SIGKILL)
                usleep(100_000)
                if !processAlive(pid) { return }
            }
            usleep(10_000)
        }
    }

    /// Some thread of the process is alive (not a zombie). The main thread
    /// turns zombie while another is still exiting (say, in an fsync), and
    /// the process's files — its mount lock among them — stay open until
    /// the last thread is gone.
    static func processAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? ["\(pid)"]
        return tasks.contains { task in
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                let close = status.lastIndex(of: ")")
            else { return false }
            let state = status[status.index(after: close)...].trimmingCharacters(in: .whitespaces).prefix(1)
            return state != "Z" && state != "X"
        }
    }

    public func logTail() -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "" }
        return text.split(separator: "\n").suffix(10).joined(separator: "\n")
    }

    // MARK: Running tools

    public struct Result: Sendable {
        public var status: Int32
        public var standardOutput: String
        public var standardError: String
    }

    /// Runs `bash -c script` in the mount point.
    @discardableResult
    public func shell(_ script: String, in workingDirectory: String? = nil) throws -> Result {
        try Self.run(["/bin/bash", "-c", script], workingDirectory: workingDirectory ?? mountpoint)
    }

    /// Runs a program (from PATH unless absolute) and collects its output.
    /// Uses `ChildProcess` (posix_spawn and waitpid on that one pid):
    /// Foundation's `Process` can miss a child's exit when waited for off the main thread.
    public static func run(_ arguments: [String], workingDirectory: String? = nil) throws -> Result {
        let scratch = NSTemporaryDirectory() + "notesfs-run-\(UUID().uuidString.prefix(8))"
        let outputPath = scratch + ".out"
        let errorPath = scratch + ".err"
        defer {
            unlink(outputPath)
            unlink(errorPath)
        }
        let pid = try ChildProcess.spawn(
            arguments,
            .init(standardOutput: .file(outputPath), standardError: .file(errorPath), workingDirectory: workingDirectory))
        let exitStatus = ChildProcess.exitStatus(ChildProcess.wait(pid))
        let output = (try? Data(contentsOf: URL(fileURLWithPath: outputPath))) ?? Data()
        let errors = (try? Data(contentsOf: URL(fileURLWithPath: errorPath))) ?? Data()
        return Result(
            status: exitStatus, standardOutput: String(decoding: output, as: UTF8.self),
            standardError: String(decoding: errors, as: UTF8.self))
    }
}
