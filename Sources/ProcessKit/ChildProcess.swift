#if canImport(Glibc)
    import Glibc
#endif

/// Starts programs with `posix_spawn`, the one way notesfs, its tests and its
/// tools start a child process. A child gets an empty signal mask and default
/// handlers for the termination signals (a parent that blocks signals to
/// `sigwait` them, as the mount does, would otherwise pass the block on and
/// the child would ignore SIGTERM), and the standard streams it is given.
public enum ChildProcess {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable, Equatable {
        /// The parent's own descriptor.
        case inherit
        /// /dev/null.
        case null
        /// A file, created (mode 0600) or truncated, or appended to.
        case file(String, append: Bool = false)
        /// Standard error only: wherever standard output goes.
        case standardOutput
        /// A descriptor of the parent's (the write end of a pipe, say).
        case descriptor(Int32)
    }

    /// How to start a child.
    public struct Options: Sendable {
        public var standardInput: Stream = .null
        public var standardOutput: Stream = .inherit
        public var standardError: Stream = .inherit
        /// Parent descriptors passed on: child descriptor (3 and up) → parent descriptor.
        public var passedDescriptors: [Int32: Int32] = [:]
        /// Look the program up in PATH unless its name has a slash.
        public var searchPath = true
        /// Start in this directory instead of the parent's (through /bin/sh).
        public var workingDirectory: String?
        /// Start a new session (no controlling terminal; a daemon).
        public var newSession = false
        /// Signals reset to their default action in the child.
        public var defaultSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGUSR1]

        public init(
            standardInput: Stream = .null, standardOutput: Stream = .inherit, standardError: Stream = .inherit,
            workingDirectory: String? = nil
        ) {
            self.standardInput = standardInput
            self.standardOutput = standardOutput
            self.standardError = standardError
            self.workingDirectory = workingDirectory
        }
    }

    /// A child that could not be started.
    public struct SpawnError: Error, CustomStringConvertible, Sendable {
        public let program: String
        /// The `errno` value posix_spawn returned.
        public let code: Int32
        public var description: String { "cannot run \(program): \(String(cString: strerror(code)))" }
    }

    // POSIX_SPAWN_SETSID (glibc 2.26+) is only declared with _GNU_SOURCE: its value is 0x80.
    private static let spawnSetSID: Int32 = 0x80

    /// Starts `arguments` and returns the child's pid. The caller reaps it
    /// (`wait`), by that pid only.
    public static func spawn(_ arguments: [String], _ options: Options = Options()) throws(SpawnError) -> pid_t {
        guard let program = arguments.first else { throw SpawnError(program: "", code: EINVAL) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        addStream(options.standardInput, to: 0, reading: true, &actions)
        addStream(options.standardOutput, to: 1, reading: false, &actions)
        addStream(options.standardError, to: 2, reading: false, &actions)
        for (child, parent) in options.passedDescriptors.sorted(by: { $0.key < $1.key }) {
            // dup2 clears close-on-exec on the copy; keep `parent` above the targets.
            posix_spawn_file_actions_adddup2(&actions, parent, child)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptySet = sigset_t()
        sigemptyset(&emptySet)
        posix_spawnattr_setsigmask(&attributes, &emptySet)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in options.defaultSignals { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if options.newSession { flags |= spawnSetSID }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var command = arguments
        if let directory = options.workingDirectory {
            // The shell changes directory, then becomes the program
            // (posix_spawn_file_actions_addchdir_np is not visible to Swift).
            command = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory] + arguments
        }
        var cArguments = command.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned =
            options.searchPath
            ? posix_spawnp(&pid, command[0], &actions, &attributes, &cArguments, environ)
            : posix_spawn(&pid, command[0], &actions, &attributes, &cArguments, environ)
        guard spawned == 0 else { throw SpawnError(program: program, code: spawned) }
        return pid
    }

    private static func addStream(
        _ stream: Stream, to descriptor: Int32, reading: Bool, _ actions: inout posix_spawn_file_actions_t
    ) {
        switch stream {
        case .inherit:
            break
        case .null:
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
        case .file(let path, let append):
            let flags = reading ? O_RDONLY : O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
            posix_spawn_file_actions_addopen(&actions, descriptor, path, flags, 0o600)
        case .standardOutput:
            posix_spawn_file_actions_adddup2(&actions, 1, descriptor)
        case .descriptor(let parent):
            posix_spawn_file_actions_adddup2(&actions, parent, descriptor)
        }
    }

    /// Waits for `pid` to end and returns its raw wait status (-1 when it cannot be waited for).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        return status
    }

    /// The wait status of `pid` if it has ended, without blocking; nil while it runs.
    public static func poll(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return status }
            if result < 0 && errno == EINTR { continue }
            return result < 0 ? -1 : nil
        }
    }

    /// The exit status of a wait status word: the exit code, or 128 + the
    /// signal that killed it (as a shell reports it).
    public static func exitStatus(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Runs `arguments` to its end and returns its exit status, or -1 when it
    /// could not be started.
    public static func run(_ arguments: [String], _ options: Options = Options()) -> Int32 {
        guard let pid = try? spawn(arguments, options) else { return -1 }
        let status = wait(pid)
        return status < 0 ? -1 : exitStatus(status)
    }
}
