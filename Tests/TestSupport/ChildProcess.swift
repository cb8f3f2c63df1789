import Foundation

/// Starts programs for tests with posix_spawn: an empty signal mask (children
/// of a test process otherwise inherit blocked signals and ignore SIGTERM),
/// standard input from /dev/null, and output to the given files.
public enum ChildProcess {
    /// Starts `arguments` (from PATH unless absolute), in `workingDirectory`
    /// when given, and returns its pid. `standardError` nil sends it where
    /// `standardOutput` goes. Files are created or truncated.
    public static func spawn(
        _ arguments: [String], standardOutput: String = "/dev/null", standardError: String? = "/dev/null",
        workingDirectory: String? = nil
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, standardOutput, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let standardError {
            posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptySet = sigset_t()
        sigemptyset(&emptySet)
        posix_spawnattr_setsigmask(&attributes, &emptySet)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var command = arguments
        if let workingDirectory {
            command = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", workingDirectory] + arguments
        }
        var cArguments = command.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, command[0], &actions, &attributes, &cArguments, environ)
        guard spawned == 0 else {
            throw MountFixture.Failure("cannot run \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// The exit status of a waitpid status word (128 + signal when killed).
    public static func exitStatus(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
