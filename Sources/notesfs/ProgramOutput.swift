import Foundation

/// Runs a helper program (systemctl) and reads what it prints.
enum ProgramOutput {
    /// Most bytes read from a helper's standard output.
    static let outputBytesMax = 65_536

    /// The standard output of `command` (looked up in PATH), its standard
    /// error discarded; nil when it cannot be started.
    static func standardOutput(_ command: [String]) -> String? {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        let readEnd = ends[0]
        let writeEnd = ends[1]
        defer { close(readEnd) }
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        var arguments = command.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        let spawned = posix_spawnp(&pid, command[0], &actions, nil, &arguments, environ)
        close(writeEnd)
        guard spawned == 0 else { return nil }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while received.count < outputBytesMax {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return String(decoding: received, as: UTF8.self)
    }
}
