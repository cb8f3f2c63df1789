import Foundation
import Synchronization

/// Time for the scheduler, injected so tests and the simulation control it:
/// a monotonic reading in seconds and the scheduler's only way to wait.
/// Every wait of the scheduler (debounce, backoff, the long poll's backoff,
/// the external-commit interval) goes through `sleep(until:orUntil:)`.
public protocol SchedulerClock: Sendable {
    /// Seconds on a monotonic clock (only differences matter).
    func now() -> Double
    /// Sleeps until `deadline` on this clock or until `alarm` rings, whichever
    /// comes first; nil waits for the other one only. Returns at once when
    /// the alarm rang since it was last heard (and clears it). Throws when
    /// the task is cancelled.
    func sleep(until deadline: Double?, orUntil alarm: SchedulerAlarm?) async throws
}

extension SchedulerClock {
    /// Sleeps `seconds` on this clock; throws when the task is cancelled.
    public func sleep(seconds: Double) async throws {
        try await sleep(until: now() + seconds, orUntil: nil)
    }
}

/// A wake-up call for one task sleeping on a `SchedulerClock`: `ring()` from
/// any thread wakes it, or, when nobody sleeps, makes the next sleep return
/// at once. Rings while nobody listens fold into one.
public final class SchedulerAlarm: Sendable {
    private struct State {
        var rung = false
        var sleeper: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    public func ring() {
        let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let sleeper = state.sleeper else {
                state.rung = true
                return nil
            }
            state.sleeper = nil
            return sleeper
        }
        sleeper?.resume()
    }

    /// Whether it rang since it was last heard (leaves it as it is).
    public var isRinging: Bool { state.withLock { $0.rung } }

    /// Hears the ring: true when it had rung, and clears it.
    public func take() -> Bool {
        state.withLock { state in
            defer { state.rung = false }
            return state.rung
        }
    }

    /// Waits for a ring (at once when it already rang); returns early when
    /// the task is cancelled. One sleeper at a time.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    precondition(state.sleeper == nil, "two tasks wait on one scheduler alarm")
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.sleeper = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.sleeper = nil }
                return state.sleeper
            }
            sleeper?.resume()
        }
    }
}

/// The real clock.
public struct SystemSchedulerClock: SchedulerClock {
    public init() {}

    public func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    public func sleep(until deadline: Double?, orUntil alarm: SchedulerAlarm?) async throws {
        if let alarm, alarm.take() { return }
        try Task.checkCancellation()
        let delay = deadline.map { max(0, $0 - now()) }
        switch (delay, alarm) {
        case (nil, nil):
            preconditionFailure("a scheduler sleep with neither a deadline nor an alarm never ends")
        case (let delay?, nil):
            try await Self.sleep(seconds: delay)
        case (nil, let alarm?):
            await alarm.wait()
            try Task.checkCancellation()
        case (let delay?, let alarm?):
            // Whichever ends first; the other is cancelled (an alarm heard by
            // the cancelled waiter only makes the caller look again, which it does anyway).
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Self.sleep(seconds: delay) }
                group.addTask { await alarm.wait() }
                _ = try await group.next()
                group.cancelAll()
            }
            try Task.checkCancellation()
        }
    }

    private static func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1e9))
    }
}
