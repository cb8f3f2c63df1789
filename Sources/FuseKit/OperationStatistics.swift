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
        var name: StaticString
        var requests = 0
        var nanoseconds: UInt64 = 0
        /// Requests by handler time, in `bucketsPerDoubling` buckets per
        /// doubling from 1 µs (within 10 % of the time: enough for a median).
        var buckets = [Int](repeating: 0, count: OperationStatistics.bucketCount)
    }

    static let bucketsPerDoubling = 8
    static let bucketCount = 24 * bucketsPerDoubling

    /// Keyed by the opcode name's address: no string is made per request.
    private let counters = Mutex<[UInt: Counter]>([:])
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
        total.add(1, ordering: .relaxed)
        let bucket = Self.bucket(nanoseconds: nanoseconds)
        counters.withLock { counters in
            let key = operation.hasPointerRepresentation
                ? UInt(bitPattern: operation.utf8Start) : UInt(operation.unicodeScalar.value)
            if counters[key] == nil { counters[key] = Counter(name: operation) }
            counters[key]?.requests += 1
            counters[key]?.nanoseconds += nanoseconds
            counters[key]?.buckets[bucket] += 1
        }
    }

    /// The bucket of a handler time: `bucketsPerDoubling` per power of two of microseconds.
    static func bucket(nanoseconds: UInt64) -> Int {
        let microseconds = max(1.0, Double(nanoseconds) / 1_000)
        return min(bucketCount - 1, Int(log2(microseconds) * Double(bucketsPerDoubling)))
    }

    /// The time (µs) below which `fraction` of the requests counted in `buckets` fell.
    static func percentile(_ fraction: Double, of buckets: [Int], requests: Int) -> Int {
        guard requests > 0 else { return 0 }
        let wanted = Int((Double(requests) * fraction).rounded(.up))
        var seen = 0
        for (index, count) in buckets.enumerated() {
            seen += count
            // The bucket's middle, on the log scale.
            if seen >= max(1, wanted) { return Int(exp2((Double(index) + 0.5) / Double(bucketsPerDoubling))) }
        }
        return 0
    }

    /// One line per opcode: requests, total, mean, median and 90th percentile time in the handler.
    func snapshotText() -> String {
        let all = counters.withLock { Array($0.values) }
        return all.sorted { $0.requests > $1.requests }.map { counter in
            let mean = counter.requests > 0 ? counter.nanoseconds / UInt64(counter.requests) / 1_000 : 0
            let median = Self.percentile(0.5, of: counter.buckets, requests: counter.requests)
            let high = Self.percentile(0.9, of: counter.buckets, requests: counter.requests)
            return "\(counter.name) \(counter.requests) requests, \(counter.nanoseconds / 1_000_000) ms, "
                + "\(mean) µs each, p50 \(median) µs, p90 \(high) µs"
        }.joined(separator: "\n")
    }

    /// Clears the counts (between benchmark phases).
    func reset() {
        counters.withLock { $0.removeAll() }
    }
}
