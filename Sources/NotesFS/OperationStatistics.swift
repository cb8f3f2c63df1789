import Foundation
import Synchronization

/// Counts the kernel's requests by opcode and the time spent answering them,
/// for profiling (`NOTESFS_OP_STATS=1`). The counts are written to the mount
/// log when the request loop ends and, while mounted, whenever a process
/// reads them through `snapshotText()`.
final class OperationStatistics: Sendable {
    /// The environment variable that turns counting on.
    static let environmentVariable = "NOTESFS_OP_STATS"

    private struct Counter {
        var requests = 0
        var nanoseconds: UInt64 = 0
    }

    private let counters = Mutex<[String: Counter]>([:])
    private let total = Atomic<Int>(0)
    /// A burst of requests ends after this long with none; its counts are then logged.
    static let quietSeconds = 1.0

    /// A counter when the environment asks for one, else nil (no cost per request).
    static func fromEnvironment() -> OperationStatistics? {
        guard let value = ProcessInfo.processInfo.environment[environmentVariable], value != "0", !value.isEmpty
        else { return nil }
        return OperationStatistics()
    }

    /// Starts a thread that logs (and resets) the counts after each burst of
    /// requests followed by `quietSeconds` of none, so benchmark phases
    /// separated by a pause are reported one by one.
    func startBurstLogging(to log: MountLog) {
        let thread = Thread { [self] in
            var last = 0
            var quietSince: DispatchTime? = nil
            while true {
                Thread.sleep(forTimeInterval: 0.1)
                let now = total.load(ordering: .relaxed)
                if now != last {
                    last = now
                    quietSince = .now()
                } else if let since = quietSince,
                    DispatchTime.now().uptimeNanoseconds - since.uptimeNanoseconds
                        > UInt64(Self.quietSeconds * 1e9)
                {
                    quietSince = nil
                    log.info("requests by opcode (burst):\n\(snapshotText())")
                    reset()
                }
            }
        }
        thread.name = "notesfs-op-stats"
        thread.start()
    }

    func record(_ operation: StaticString, nanoseconds: UInt64) {
        let name = operation.description
        total.add(1, ordering: .relaxed)
        counters.withLock { counters in
            counters[name, default: Counter()].requests += 1
            counters[name, default: Counter()].nanoseconds += nanoseconds
        }
    }

    /// One line per opcode: requests, total and mean time in the handler.
    func snapshotText() -> String {
        let all = counters.withLock { $0 }
        return all.sorted { $0.value.requests > $1.value.requests }.map { name, counter in
            let mean = counter.requests > 0 ? counter.nanoseconds / UInt64(counter.requests) / 1_000 : 0
            return "\(name) \(counter.requests) requests, \(counter.nanoseconds / 1_000_000) ms, \(mean) µs each"
        }.joined(separator: "\n")
    }

    /// Clears the counts (between benchmark phases).
    func reset() {
        counters.withLock { $0.removeAll() }
    }
}
