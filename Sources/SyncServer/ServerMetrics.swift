import Foundation
import Synchronization

/// Counters for `/metrics`, in Prometheus text format 0.0.4.
public final class ServerMetrics: Sendable {
    /// Upper bounds of the latency histogram, in seconds.
    static let latencyBucketsSeconds: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    ]

    private struct Histogram {
        var buckets = [Int](repeating: 0, count: ServerMetrics.latencyBucketsSeconds.count)
        var count = 0
        var sum = 0.0

        mutating func add(_ seconds: Double) {
            for (index, bound) in ServerMetrics.latencyBucketsSeconds.enumerated() where seconds <= bound {
                buckets[index] += 1
            }
            count += 1
            sum += seconds
        }
    }

    private struct RequestKey: Hashable {
        let route: String
        let status: Int
    }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        var latency: [String: Histogram] = [:]
        var pushResults: [String: Int] = ["applied": 0, "conflict": 0, "refused": 0, "replayed": 0, "unchanged": 0]
    }

    private let state = Mutex(State())

    public init() {}

    func record(route: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests[RequestKey(route: route, status: status), default: 0] += 1
            // In place: a copy taken out and put back would copy the buckets on every request.
            state.latency[route, default: Histogram()].add(seconds)
        }
    }

    func record(_ tally: PushTally) {
        state.withLock { state in
            state.pushResults["applied", default: 0] += tally.applied
            state.pushResults["unchanged", default: 0] += tally.unchanged
            state.pushResults["conflict", default: 0] += tally.conflicts
            state.pushResults["refused", default: 0] += tally.refused
            state.pushResults["replayed", default: 0] += tally.replayed
        }
    }

    /// Requests answered so far with `status` on `route`.
    public func requests(route: String, status: Int) -> Int {
        state.withLock { $0.requests[RequestKey(route: route, status: status)] ?? 0 }
    }

    /// The exposition text.
    func render(longPollsHeld: Int, accounts: Int?) -> String {
        let snapshot = state.withLock { $0 }
        var lines: [String] = []
        lines.append("# HELP notesfs_http_requests_total Requests answered, by route and status.")
        lines.append("# TYPE notesfs_http_requests_total counter")
        for (key, count) in snapshot.requests.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            lines.append("notesfs_http_requests_total{route=\"\(key.route)\",status=\"\(key.status)\"} \(count)")
        }
        lines.append("# HELP notesfs_push_changes_total Pushed changes, by result.")
        lines.append("# TYPE notesfs_push_changes_total counter")
        for (result, count) in snapshot.pushResults.sorted(by: { $0.key < $1.key }) {
            lines.append("notesfs_push_changes_total{result=\"\(result)\"} \(count)")
        }
        lines.append("# HELP notesfs_http_request_duration_seconds Time to answer a request, by route.")
        lines.append("# TYPE notesfs_http_request_duration_seconds histogram")
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            for (index, bound) in Self.latencyBucketsSeconds.enumerated() {
                lines.append(
                    "notesfs_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(histogram.buckets[index])"
                )
            }
            lines.append(
                "notesfs_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(histogram.count)")
            lines.append("notesfs_http_request_duration_seconds_sum{route=\"\(route)\"} \(histogram.sum)")
            lines.append("notesfs_http_request_duration_seconds_count{route=\"\(route)\"} \(histogram.count)")
        }
        lines.append("# HELP notesfs_long_polls_held Long polls parked now.")
        lines.append("# TYPE notesfs_long_polls_held gauge")
        lines.append("notesfs_long_polls_held \(longPollsHeld)")
        if let accounts {
            lines.append("# HELP notesfs_accounts Accounts in the store.")
            lines.append("# TYPE notesfs_accounts gauge")
            lines.append("notesfs_accounts \(accounts)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
