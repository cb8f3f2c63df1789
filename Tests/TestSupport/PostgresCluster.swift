import Foundation
import ProcessKit
import Synchronization

/// A throwaway PostgreSQL 15 cluster for tests (PLATFORM.md): `initdb` in a
/// fresh temporary directory owned by the `postgres` user, started with
/// `pg_ctl` on a free loopback port, stopped with `stop()`. Every cluster
/// this process starts is also stopped when the process exits (`atexit`), and
/// the first start in a process stops clusters left behind by earlier test
/// processes that died (their directory names carry the owner's pid).
public final class PostgresCluster: Sendable {
    public static let binDirectory = "/usr/lib/postgresql/15/bin"
    /// Seconds to wait for a start or stop.
    public static let timeoutSeconds = 60

    /// The cluster's directory (data in `data/`, log in `log`, socket here).
    public let directory: String
    public let port: Int
    private let stopped = Atomic<Bool>(false)

    public var dataDirectory: String { directory + "/data" }
    public var logPath: String { directory + "/log" }

    /// A libpq connection string for `database`.
    public func conninfo(database: String = "postgres") -> String {
        "host=127.0.0.1 port=\(port) user=postgres dbname=\(database)"
    }

    /// Why no cluster can be started here, or nil.
    public static var unavailableReason: String? {
        for tool in ["initdb", "pg_ctl", "postgres"] where access("\(binDirectory)/\(tool)", X_OK) != 0 {
            return "\(binDirectory)/\(tool) is missing (apt-get install postgresql)"
        }
        if getuid() == 0 && getpwnam("postgres") == nil { return "there is no postgres user to run the cluster as" }
        return nil
    }

    /// `initdb` and start. `settings` are extra `-c name=value` server settings.
    public static func start(settings: [String: String] = [:]) throws -> PostgresCluster {
        if let reason = unavailableReason { throw ClusterError(reason) }
        sweepLeftovers()
        let base = URL(fileURLWithPath: NSTemporaryDirectory())
        let directory = base.appendingPathComponent("notesfs-pg-\(getpid())-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: directory)
        }
        do {
            try run("initdb", ["-D", directory + "/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try freePort()
            let cluster = PostgresCluster(directory: directory, port: port)
            do {
                try cluster.startServer(settings: settings)
                registry.withLock { $0.append(cluster) }
                registerExitHandler()
                return cluster
            } catch {
                lastError = error
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw lastError ?? ClusterError("PostgreSQL did not start")
    }

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    private let settingsText = Mutex<String>("")

    private func startServer(settings: [String: String]) throws {
        // Room for every suite of one parallel `swift test` run at once: each
        // store keeps a pool, two writers, a listener and a notifier, and
        // 300 ran out ("too many clients already") when all ran together.
        var options = "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory) -c max_connections=1000"
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) { options += " -c \(name)=\(value)" }
        settingsText.withLock { $0 = options }
        try Self.run("pg_ctl", ["-D", dataDirectory, "-l", logPath, "-w", "-t", String(Self.timeoutSeconds), "-o", options, "start"])
    }

    /// Starts the stopped server again on the same port and data.
    public func restart() throws {
        let options = settingsText.withLock { $0 }
        try Self.run("pg_ctl", ["-D", dataDirectory, "-l", logPath, "-w", "-t", String(Self.timeoutSeconds), "-o", options, "start"])
    }

    /// Stops the server but keeps the data: `immediate` is a crash (recovery
    /// at the next start), otherwise a fast clean shutdown.
    public func stopServer(immediate: Bool = false) throws {
        try Self.run("pg_ctl", ["-D", dataDirectory, "-m", immediate ? "immediate" : "fast", "-w", "-t", String(Self.timeoutSeconds), "stop"])
    }

    /// Stops the server and removes the directory. Safe to call twice.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try? Self.run("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "-t", String(Self.timeoutSeconds), "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `psql` with `sql` against `database` (for test setup only).
    public func psql(_ sql: String, database: String = "postgres") throws {
        try Self.run("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-c", sql], binDirectory: "/usr/bin")
    }

    // MARK: Processes

    public struct ClusterError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs a PostgreSQL tool (as the postgres user when we are root) and
    /// waits; throws with its output when it fails. Uses `ChildProcess`
    /// (posix_spawn and `waitpid` on that one pid): Foundation's `Process.waitUntilExit` was
    /// seen to hang here once `pg_ctl`'s daemon outlived it.
    static func run(_ tool: String, _ arguments: [String], binDirectory: String = binDirectory) throws {
        let command: [String] =
            getuid() == 0
            ? ["/usr/sbin/runuser", "-u", "postgres", "--", "\(binDirectory)/\(tool)"] + arguments
            : ["\(binDirectory)/\(tool)"] + arguments
        let outputPath = NSTemporaryDirectory() + "notesfs-pgtool-\(getpid())-\(UUID().uuidString.prefix(8)).out"
        defer { unlink(outputPath) }
        // Start in / (the postgres user may not read the current directory).
        let pid = try ChildProcess.spawn(
            command, .init(standardOutput: .file(outputPath), standardError: .standardOutput, workingDirectory: "/"))
        let status = ChildProcess.wait(pid)
        guard status >= 0 else { throw ClusterError("waitpid failed: errno \(errno)") }
        let exited = (status & 0x7f) == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw ClusterError("\(tool) failed (status \(status)): \(text.suffix(2000))")
        }
    }

    /// A loopback TCP port nobody listens on right now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClusterError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw ClusterError("bind() failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw ClusterError("getsockname() failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    // MARK: Cleanup

    private static let registry = Mutex<[PostgresCluster]>([])
    private static let exitHandlerRegistered = Atomic<Bool>(false)
    private static let swept = Atomic<Bool>(false)

    private static func registerExitHandler() {
        guard !exitHandlerRegistered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        atexit {
            let clusters = PostgresCluster.registry.withLock { $0 }
            for cluster in clusters { cluster.stop() }
        }
    }

    /// Stops and removes clusters whose owning test process is gone.
    private static func sweepLeftovers() {
        guard !swept.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let base = NSTemporaryDirectory()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        for name in names where name.hasPrefix("notesfs-pg-") {
            let parts = name.split(separator: "-")
            guard parts.count >= 4, let owner = Int32(parts[2]), owner != getpid() else { continue }
            if kill(owner, 0) == 0 || errno != ESRCH { continue }
            let directory = URL(fileURLWithPath: base).appendingPathComponent(name).path
            try? run("pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
