import Foundation
import ProcessKit

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
        let spawned = try? ChildProcess.spawn(
            command, .init(standardInput: .null, standardOutput: .descriptor(writeEnd), standardError: .null))
        close(writeEnd)
        guard let pid = spawned else { return nil }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while received.count < outputBytesMax {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        _ = ChildProcess.wait(pid)
        return String(decoding: received, as: UTF8.self)
    }
}
