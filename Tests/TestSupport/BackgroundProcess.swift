import Foundation

/// A program started in the background (a writer holding a descriptor open
/// across a sync, say), ended by its pid. Its output goes to /dev/null.
public final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: used by one test at a time, from one task.
    public let pid: pid_t
    private var exitStatus: Int32?

    /// Starts `arguments` (from PATH unless absolute) in `workingDirectory`.
    public init(_ arguments: [String], in workingDirectory: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptySet = sigset_t()
        sigemptyset(&emptySet)
        posix_spawnattr_setsigmask(&attributes, &emptySet)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let command = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", workingDirectory] + arguments
        var cArguments = command.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawnp(&child, command[0], &actions, &attributes, &cArguments, environ)
        guard spawned == 0 else {
            throw MountFixture.Failure("cannot run \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        pid = child
    }

    /// The exit status once it ends within `seconds`; nil when it is still running.
    public func waitForExit(seconds: Double) -> Int32? {
        if let exitStatus { return exitStatus }
        let deadline = Date().addingTimeInterval(seconds)
        var status: Int32 = 0
        while Date() < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
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
