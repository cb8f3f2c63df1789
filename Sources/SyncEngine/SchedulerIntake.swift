import Synchronization

// How the world outside the scheduler's actor tells it that something
// happened. The store's observer runs on the thread that committed (a FUSE
// worker), the mount reports closes and fsyncs from its workers, and none of
// them may wait for the actor (a sync run can hold it for minutes). So a
// report never touches the actor's state: it is folded into the intake's
// arrivals, under a lock held for a few assignments (no I/O, nothing
// awaited), and rings the alarm the loop sleeps on. The loop, inside the
// actor, takes the arrivals and applies them to the work it keeps
// (`PendingWork`); nothing else reads them.
//
// Why not an `AsyncStream`: the loop must sleep until a deadline *or* a
// report, and its clock (real or simulated) understands only its alarm; a
// stream would need a second task to wait on it, which the simulation could
// not park, and a stream cannot be emptied without waiting once too often.
// The arrivals fold: any number of reports is one small value, so the
// intake has a bound however long a run keeps the loop away.

/// Reports from other threads on their way to the scheduler's loop (see above).
final class SchedulerIntake: Sendable {
    /// What was reported since the loop last took it, folded so that applying
    /// it equals applying each report in the order it came.
    struct Arrivals: Sendable, Equatable {
        /// The first and the last local change reported.
        var firstChangeAt: Double?
        var lastChangeAt: Double?
        /// An edit of a note the server already has.
        var syncedEdit = false
        /// Any other local change (a new note, a rename, a delete).
        var otherChange = false
        /// A close or fsync came after a synced edit reported here.
        var closedAfterSyncedEdit = false
        /// A close or fsync came at all (it counts, too, when the loop
        /// already has a synced edit waiting).
        var closed = false
        var runRequested = false
    }

    /// The loop sleeps on this; every report rings it.
    let alarm = SchedulerAlarm()
    private let arrivals = Mutex(Arrivals())

    /// A local commit that changed the outbox, at `time` on the scheduler's clock.
    func localChange(at time: Double, syncedEdit: Bool) {
        arrivals.withLock { arrivals in
            if arrivals.firstChangeAt == nil { arrivals.firstChangeAt = time }
            arrivals.lastChangeAt = time
            if syncedEdit {
                arrivals.syncedEdit = true
            } else {
                arrivals.otherChange = true
            }
        }
        alarm.ring()
    }

    /// The mount closed or fsynced a file.
    func fileClosed() {
        arrivals.withLock { arrivals in
            arrivals.closed = true
            if arrivals.syncedEdit { arrivals.closedAfterSyncedEdit = true }
        }
        alarm.ring()
    }

    /// A run is wanted as soon as possible.
    func requestRun() {
        arrivals.withLock { $0.runRequested = true }
        alarm.ring()
    }

    /// Everything reported since the last take (the loop's, inside the actor).
    func take() -> Arrivals {
        arrivals.withLock { arrivals in
            defer { arrivals = Arrivals() }
            return arrivals
        }
    }
}

/// The work the scheduler's loop has heard of and not yet run: actor state,
/// changed only by the loop (from the intake's arrivals) and by starting a run.
struct PendingWork: Equatable {
    var localChangeAt: Double?
    var firstLocalChangeAt: Double?
    /// A change that is not an edit of a note the server has (a new note,
    /// a rename, a delete) waits for the debounce even on close.
    var otherChangePending = false
    var syncedEditPending = false
    var closedAfterSyncedEdit = false
    var runNow = false

    /// Takes in what the intake folded, as if each report came one by one.
    mutating func absorb(_ arrivals: SchedulerIntake.Arrivals) {
        if arrivals.closed && syncedEditPending { closedAfterSyncedEdit = true }
        if arrivals.closedAfterSyncedEdit { closedAfterSyncedEdit = true }
        if let last = arrivals.lastChangeAt { localChangeAt = last }
        if firstLocalChangeAt == nil { firstLocalChangeAt = arrivals.firstChangeAt }
        if arrivals.syncedEdit { syncedEditPending = true }
        if arrivals.otherChange { otherChangePending = true }
        if arrivals.runRequested { runNow = true }
    }
}
