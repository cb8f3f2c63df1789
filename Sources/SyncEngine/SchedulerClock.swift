import Foundation

/// Time for the scheduler, injected so tests control it: a monotonic reading
/// in seconds and a sleep.
public protocol SchedulerClock: Sendable {
    /// Seconds on a monotonic clock (only differences matter).
    func now() -> Double
    /// Sleeps `seconds`; throws when the task is cancelled.
    func sleep(seconds: Double) async throws
}

/// The real clock.
public struct SystemSchedulerClock: SchedulerClock {
    public init() {}

    public func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    public func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1e9))
    }
}
