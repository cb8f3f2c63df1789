import Foundation
import Synchronization

/// Where the mount writes its log lines: a file under the data directory and,
/// in the foreground, stderr too. Passed in, never global.
public final class MountLog: Sendable {
    private let sinks: Mutex<[Int32]>
    private let ownedDescriptors: [Int32]

    /// A log writing to the given open file descriptors (not closed by the log).
    public init(descriptors: [Int32]) {
        sinks = Mutex(descriptors)
        ownedDescriptors = []
    }

    /// A log appending to `path` (created if missing) and, when `alsoStandardError`, to stderr.
    public init(path: String, alsoStandardError: Bool) throws {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            throw FileSystemError(code)
        }
        var all = [descriptor]
        if alsoStandardError { all.append(STDERR_FILENO) }
        sinks = Mutex(all)
        ownedDescriptors = [descriptor]
    }

    /// A log that drops everything.
    public static var discard: MountLog { MountLog(descriptors: []) }

    deinit {
        for descriptor in ownedDescriptors { close(descriptor) }
    }

    public func info(_ message: String) { write("info", message) }
    public func warning(_ message: String) { write("warning", message) }
    public func error(_ message: String) { write("error", message) }

    private func write(_ level: String, _ message: String) {
        let stamp = Date().ISO8601Format(.iso8601.year().month().day().time(includingFractionalSeconds: true))
        let line = Array("\(stamp) \(level) \(message)\n".utf8)
        sinks.withLock { descriptors in
            for descriptor in descriptors {
                line.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                        if written <= 0 { break }
                        offset += written
                    }
                }
            }
        }
    }
}
