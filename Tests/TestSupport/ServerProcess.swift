import Foundation
import ProcessKit

/// A real `notesfs serve` process on loopback with its data in a directory,
/// run as a `SpawnedProcess`. `stop()` it in a `defer`; it is ended by its
/// pid only.
public final class ServerProcess: @unchecked Sendable {
    // @unchecked: `process` and `port` are only changed by start/stop, which
    // one test calls from one task at a time.
    public let dataDirectory: String
    public let logPath: String
    public private(set) var port: UInt16 = 0
    private var process: SpawnedProcess?

    /// The running server's pid (nil while stopped).
    public var pid: pid_t? { process?.pid }

    /// More `serve` flags (`--tls-cert`, `--tls-key`), set before `start()`.
    public var extraArguments: [String] = []

    public var url: String { "\(extraArguments.contains("--tls-cert") ? "https" : "http")://127.0.0.1:\(port)" }

    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
        self.logPath = dataDirectory + ".log"
    }

    /// Makes an account and writes its token to `tokenPath`.
    public func addAccount(_ name: String, tokenPath: String) throws {
        guard let binary = MountFixture.binaryPath else { throw MountFixture.Failure("notesfs binary not found") }
        let result = try MountFixture.run([binary, "account", "add", name, "--data", dataDirectory])
        guard result.status == 0 else { throw MountFixture.Failure("account add failed: \(result.standardError)") }
        try Data(result.standardOutput.utf8).write(to: URL(fileURLWithPath: tokenPath))
        chmod(tokenPath, 0o600)
    }

    /// Starts the server (on the same port as before after a stop) and waits until it listens.
    public func start() throws {
        guard process == nil else { return }
        guard let binary = MountFixture.binaryPath else { throw MountFixture.Failure("notesfs binary not found") }
        let listen = "127.0.0.1:\(port)"
        try? FileManager.default.removeItem(atPath: logPath)
        let child = try SpawnedProcess(
            [binary, "serve", "--listen", listen, "--data", dataDirectory] + extraArguments,
            options: .init(standardOutput: .null, standardError: .file(logPath)), outputPath: logPath)
        process = child
        // A generous ceiling: the server says when it listens, or dies.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, child.isRunning {
            let text = child.output
            if let range = text.range(of: "listening on http://127.0.0.1:") ?? text.range(of: "listening on https://127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let value = UInt16(digits) {
                    port = value
                    return
                }
            }
            usleep(20_000)
        }
        stop()
        throw MountFixture.Failure("notesfs serve did not start: \(child.output)")
    }

    /// SIGTERM, then SIGKILL after 30 s; waits for the exit.
    public func stop() {
        guard let process else { return }
        process.stop(seconds: 30)
        self.process = nil
    }
}
