import Foundation
import ProcessKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process a test started, through `ChildProcess` (ProcessKit): the
/// one wrapper the tests use for a program that runs beside them (a server,
/// a writer holding a file open, a mount daemon). It is signalled, killed and
/// reaped by its own pid only; its output may go to a file (`output`).
/// `stop` or `kill` it in a `defer`.
public final class SpawnedProcess: Sendable {
    public let pid: pid_t
    /// The file its output goes to, when it has one.
    public let outputPath: String?
    /// The raw wait status once it has been reaped.
    private let reaped = Mutex<Int32?>(nil)

    /// Starts `arguments` with `options`; `outputPath` names the file
    /// `options` sends its output to, for `output`.
    public init(_ arguments: [String], options: ChildProcess.Options, outputPath: String? = nil) throws {
        self.outputPath = outputPath
        pid = try ChildProcess.spawn(arguments, options)
    }

    /// Starts `arguments` (a path, not looked up in PATH) with standard output
    /// and standard error appended to `outputPath`.
    public convenience init(_ arguments: [String], outputPath: String) throws {
        var options = ChildProcess.Options(
            standardOutput: .file(outputPath, append: true), standardError: .standardOutput)
        options.searchPath = false
        try self.init(arguments, options: options, outputPath: outputPath)
    }

    /// Starts `arguments` (from PATH unless absolute) in `workingDirectory`,
    /// its output going nowhere: a program whose exit status is all the test
    /// needs (a writer holding a descriptor open across a sync, say).
    public static func background(_ arguments: [String], in workingDirectory: String) throws -> SpawnedProcess {
        try SpawnedProcess(
            arguments,
            options: ChildProcess.Options(standardOutput: .null, standardError: .null, workingDirectory: workingDirectory))
    }

    /// The output so far ("" when it goes to no file).
    public var output: String {
        guard let outputPath else { return "" }
        return (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }

    /// True while the process has not exited (reaping it if it has).
    public var isRunning: Bool { poll() == nil }

    /// Sends `number` unless it has already been reaped (its pid may then
    /// belong to another process).
    public func signal(_ number: Int32) {
        reaped.withLock { status in
            if status == nil { _ = Glibc.kill(pid, number) }
        }
    }

    /// Waits up to `seconds` for it to exit, then kills it (SIGKILL), and
    /// returns its exit status as a shell reports it: the exit code, or 128 +
    /// the signal that ended it (-1 when it could not be waited for). The
    /// ceiling guards against a hang; it is never a measurement.
    @discardableResult
    public func wait(seconds: Double = 30) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        while poll() == nil {
            if Date() > deadline {
                kill()
                break
            }
            usleep(10_000)
        }
        return exitStatus ?? -1
    }

    /// SIGTERM, then SIGKILL after `seconds`; waits for the exit.
    public func stop(seconds: Double = 30) {
        signal(SIGTERM)
        wait(seconds: seconds)
    }

    /// Ends it at once (SIGKILL) unless it has ended already, and reaps it.
    public func kill() {
        reaped.withLock { status in
            guard status == nil else { return }
            _ = Glibc.kill(pid, SIGKILL)
            status = ChildProcess.wait(pid)
        }
    }

    /// Its exit status once reaped (as `wait` returns it), nil while it runs.
    public var exitStatus: Int32? {
        guard let status = poll() else { return nil }
        return status < 0 ? -1 : ChildProcess.exitStatus(status)
    }

    /// The raw wait status once it has ended, reaping it then; nil while it runs.
    private func poll() -> Int32? {
        reaped.withLock { status in
            if status == nil { status = ChildProcess.poll(pid) }
            return status
        }
    }
}
