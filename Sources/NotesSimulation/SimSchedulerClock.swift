import Foundation
import SyncEngine
import Synchronization

/// Where the schedulers' tasks wait in simulated time, and the world's
/// hand on when each goes on.
///
/// Every wait of a `SyncScheduler` goes through its clock, and the long poll
/// waits inside `SimTransport`; both park here. Parking never returns by
/// itself: a waiter is ready when its deadline has come, its alarm rang or
/// its condition holds, and only the world releases it — one at a time, the
/// oldest ready waiter first, and the world then waits until every started
/// scheduler's tasks are parked again. So at most one piece of scheduler
/// code runs at any moment, in an order fixed by the seed, and a seed
/// replays exactly although the scheduler runs its own concurrent tasks.
final class SimSchedulerHub: Sendable {
    private struct Waiter {
        var id: Int
        var owner: Int
        /// Absolute `SimTime` nanoseconds.
        var deadline: Int64?
        var alarm: SchedulerAlarm?
        var condition: (@Sendable () -> Bool)?
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var waiters: [Waiter] = []
        var nextWaiterID = 0
        var nextOwner = 0
        /// Waiters whose task was cancelled before they parked.
        var cancelledEarly = Set<Int>()
        /// Started schedulers (owners) and how many of their tasks park when all is quiet.
        var parkingTasks: [Int: Int] = [:]
        /// The world, waiting for the schedulers to come to rest.
        var restWaiter: CheckedContinuation<Bool, Never>?
        /// Bumped per rest wait, so the watchdog tells a stuck wait from a new one.
        var restWaitGeneration = 0
    }

    let time: SimTime
    private let state = Mutex(State())

    init(time: SimTime) { self.time = time }

    // MARK: Owners (one per started scheduler)

    /// A new scheduler whose `tasks` long-lived tasks park when it is at rest.
    func addOwner(tasks: Int) -> Int {
        state.withLock { state in
            defer { state.nextOwner += 1 }
            state.parkingTasks[state.nextOwner] = tasks
            return state.nextOwner
        }
    }

    /// A scheduler that is being stopped: its waiters are never released
    /// (stopping cancels them) and it no longer counts for rest.
    func retire(_ owner: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.parkingTasks[owner] = nil
            return Self.takeRestWaiterIfAtRest(&state)
        }
        waiter?.resume(returning: true)
    }

    // MARK: Parking (scheduler tasks)

    /// Parks the calling task until the world releases it (see the type's
    /// comment); throws `CancellationError` when the task is cancelled.
    func park(
        owner: Int, deadline: Int64?, alarm: SchedulerAlarm?, condition: (@Sendable () -> Bool)? = nil
    ) async throws {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (cancelled, rest) = state.withLock { state -> (Bool, CheckedContinuation<Bool, Never>?) in
                    if state.cancelledEarly.remove(id) != nil { return (true, nil) }
                    state.waiters.append(
                        Waiter(
                            id: id, owner: owner, deadline: deadline, alarm: alarm, condition: condition,
                            continuation: continuation))
                    return (false, Self.takeRestWaiterIfAtRest(&state))
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                rest?.resume(returning: true)
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                    return state.waiters.remove(at: index)
                }
                state.cancelledEarly.insert(id)
                return nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    private static func atRest(_ state: State) -> Bool {
        state.parkingTasks.allSatisfy { owner, tasks in
            state.waiters.lazy.filter { $0.owner == owner }.count >= tasks
        }
    }

    private static func takeRestWaiterIfAtRest(_ state: inout State) -> CheckedContinuation<Bool, Never>? {
        guard state.restWaiter != nil, atRest(state) else { return nil }
        defer { state.restWaiter = nil }
        return state.restWaiter
    }

    // MARK: Driving (the world's task only)

    /// Waits until every started scheduler's tasks are parked; false when
    /// the watchdog gave up on them (a scheduler that never comes to rest).
    func waitForRest() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let atRest = state.withLock { state -> Bool in
                precondition(state.restWaiter == nil, "two rest waits at once")
                if Self.atRest(state) { return true }
                state.restWaiter = continuation
                state.restWaitGeneration += 1
                return false
            }
            if atRest { continuation.resume(returning: true) }
        }
    }

    /// The generation of the rest wait going on, or nil when none is.
    var pendingRestWait: Int? { state.withLock { $0.restWaiter == nil ? nil : $0.restWaitGeneration } }

    /// Gives up on the rest wait of `generation` if it is still going on.
    func abandonRestWait(generation: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.restWaitGeneration == generation else { return nil }
            defer { state.restWaiter = nil }
            return state.restWaiter
        }
        waiter?.resume(returning: false)
    }

    /// Releases the oldest waiter of a started scheduler that is ready now and
    /// waits for rest. Nil when none was ready; false when rest never came.
    func releaseOneReady() async -> Bool? {
        let now = time.now
        let released = state.withLock { state -> Waiter? in
            let index = state.waiters.indices.filter { index in
                let waiter = state.waiters[index]
                guard state.parkingTasks[waiter.owner] != nil else { return false }
                if let deadline = waiter.deadline, deadline <= now { return true }
                if waiter.alarm?.isRinging == true { return true }
                return waiter.condition?() == true
            }.min { state.waiters[$0].id < state.waiters[$1].id }
            return index.map { state.waiters.remove(at: $0) }
        }
        guard let released else { return nil }
        _ = released.alarm?.take()
        released.continuation.resume()
        return await waitForRest()
    }

    /// The earliest deadline of a started scheduler's waiter.
    var earliestDeadline: Int64? {
        state.withLock { state in
            state.waiters.filter { state.parkingTasks[$0.owner] != nil }.compactMap(\.deadline).min()
        }
    }
}

/// A scheduler's clock in the simulation: seconds of `SimTime`, and sleeps
/// that park in the hub.
struct SimSchedulerClock: SchedulerClock {
    let hub: SimSchedulerHub
    let owner: Int

    func now() -> Double { Double(hub.time.now - SimTime.start) / 1e9 }

    func sleep(until deadline: Double?, orUntil alarm: SchedulerAlarm?) async throws {
        precondition(deadline != nil || alarm != nil, "a scheduler sleep with neither a deadline nor an alarm")
        // One nanosecond past the deadline, so `now()` read after the wake is past it too.
        let wakeAt = deadline.map { SimTime.start + Int64(($0 * 1e9).rounded(.up)) + 1 }
        try await hub.park(owner: owner, deadline: wakeAt, alarm: alarm)
    }
}
