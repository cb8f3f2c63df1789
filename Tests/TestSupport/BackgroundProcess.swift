import Foundation
import ProcessKit

/// A program started in the background (a writer holding a descriptor open
/// across a sync, say), ended by its pid. Its output goes to /dev/null.
public final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: used by one test at a time, from one task.
    public let pid: pid_t
    private var exitStatus: Int32?

    /// Starts `arguments` (from PATH unless absolute) in `workingDirectory`.
    public init(_ arguments: [String], in workingDirectory: String) throws {
        pid = try ChildProcess.spawn(
            arguments, .init(standardOutput: .null, standardError: .null, workingDirectory: workingDirectory))
    }

    /// The exit status once it ends within `seconds`; nil when it is still running.
    public func waitForExit(seconds: Double) -> Int32? {
        if let exitStatus { return exitStatus }
        let deadline = Date().addingTimeInterval(seconds)
        var status: Int32 = 0
        while Date() < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                let code = ChildProcess.exitStatus(status)
                exitStatus = code
                return code
            }
            if result < 0 && errno != EINTR { return nil }
            usleep(10_000)
        }
        return nil
    }

    /// Ends it (SIGKILL) unless it has ended already, and reaps it.
    public func terminate() {
        guard exitStatus == nil else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exitStatus = 128 + SIGKILL
    }
}
