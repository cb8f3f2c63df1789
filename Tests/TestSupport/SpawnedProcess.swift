import Foundation
import ProcessKit

/// A child process started with `ChildProcess`, its output going to a file.
/// The owner stops it with `terminate`/`kill` and reaps it with `wait`, by
/// its pid only. `@unchecked Sendable`: `reaped` is guarded by `lock`; the
/// rest is immutable.
public final class SpawnedProcess: @unchecked Sendable {
    public let pid: pid_t
    public let outputPath: String
    private let lock = NSLock()
    private var exitStatus: Int32?

    public init(_ arguments: [String], outputPath: String) throws {
        self.outputPath = outputPath
        var options = ChildProcess.Options(standardOutput: .file(outputPath, append: true), standardError: .standardOutput)
        options.searchPath = false
        pid = try ChildProcess.spawn(arguments, options)
    }

    /// The output so far.
    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// True while the process has not exited (reaping it if it has).
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus != nil { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            exitStatus = status
            return false
        }
        return true
    }

    public func signal(_ number: Int32) {
        if isRunning { _ = kill(pid, number) }
    }

    /// Waits up to `seconds` for the exit (then SIGKILL) and returns the raw wait status.
    @discardableResult
    public func wait(seconds: Double = 10) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning {
            if Date() > deadline {
                _ = kill(pid, SIGKILL)
                lock.lock()
                var status: Int32 = 0
                if exitStatus == nil, waitpid(pid, &status, 0) == pid { exitStatus = status }
                lock.unlock()
                break
            }
            usleep(10_000)
        }
        lock.lock()
        defer { lock.unlock() }
        return exitStatus ?? -1
    }

    /// SIGTERM, then SIGKILL after `seconds`.
    public func stop(seconds: Double = 10) {
        signal(SIGTERM)
        wait(seconds: seconds)
    }
}
