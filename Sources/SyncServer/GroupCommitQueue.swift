import Foundation

/// The queue in front of a store's writer threads (group commit): jobs queued
/// while a group is being committed run together in the next group, in one
/// transaction with one durable commit, so one fsync acknowledges many
/// pushes. The queue collects the jobs, hands each writer thread at most
/// `groupJobsMax` of them at a time, in arrival order, and answers every job
/// exactly once when its group's outcome is known. How a group runs (its
/// transaction, savepoints, retries) is the backend's step:
/// `GroupCommitWriter` for SQLite, `PostgresGroupWriter` for PostgreSQL.
///
/// A backend may also ask for a periodic check: between groups, and at least
/// every `Check.seconds` when idle, one writer thread runs it (outside any
/// transaction). SQLite uses it to notice commits of other connections.
///
/// `@unchecked Sendable`: `pending`, `stopped`, `running`, `check` and
/// `nextCheck` are guarded by `condition`; a job belongs to its submitter until it is queued, then to
/// the one writer thread that took it.
package final class GroupCommitQueue<Work>: @unchecked Sendable {
    /// One queued job: the backend's work, and the answer to its caller.
    package struct Job {
        /// What the backend's step runs inside the group's transaction.
        package let work: Work
        /// Answers the caller: nil once the group committed (the caller then
        /// gets the job's own result), else the group's error.
        fileprivate let finish: ((any Error)?) -> Void
    }

    /// A job's own result, kept by its work between running and the answer.
    /// Touched only by the writer thread running the job's group.
    package final class JobResult<T> {
        package var value: Result<T, any Error> = .failure(ServerStoreError.failure("the job did not run"))
    }

    /// How one writer thread (`thread`, from 0) runs a group: in one
    /// transaction, durably committed before it returns. Throws the error
    /// every job of the group fails with, when nothing of the group
    /// committed; otherwise returns what to do once every job is answered.
    package typealias Step = @Sendable (_ thread: Int, _ group: [Job]) throws -> (() -> Void)?

    /// A periodic check run on a writer thread, between groups.
    package struct Check: Sendable {
        package let seconds: Double
        package let run: @Sendable (_ thread: Int) -> Void

        package init(every seconds: Double, run: @escaping @Sendable (_ thread: Int) -> Void) {
            self.seconds = seconds
            self.run = run
        }
    }

    private let condition = NSCondition()
    private var pending: [Job] = []
    private var stopped = false
    private var running = 0
    private var check: Check?
    private var nextCheck = Date()
    private let groupJobsMax: Int

    /// A queue taking at most `groupJobsMax` jobs into one group; `start` runs it.
    package init(groupJobsMax: Int) {
        precondition(groupJobsMax >= 1, "a group must take at least one job")
        self.groupJobsMax = groupJobsMax
    }

    /// Starts one writer thread per name, each running groups with `step`.
    /// Called once, by the backend's writer as soon as it can run groups.
    /// With `check`, also runs that between groups (see the type's comment).
    package func start(threadNames: [String], check: Check? = nil, step: @escaping Step) {
        precondition(!threadNames.isEmpty, "group commit needs a writer thread")
        condition.lock()
        precondition(running == 0 && !stopped, "a group commit queue starts once")
        running = threadNames.count
        self.check = check
        if let check { nextCheck = Date().addingTimeInterval(check.seconds) }
        condition.unlock()
        for (index, name) in threadNames.enumerated() {
            let thread = Thread { [self] in loop(thread: index, step) }
            thread.name = name
            thread.start()
        }
    }

    /// Queues a job whose work `makeWork` builds around its result slot, and
    /// returns that result once the job's group committed (or the group's
    /// error). Fails with `unavailable` once the queue is stopped.
    package func submit<T: Sendable>(_ makeWork: (JobResult<T>) -> Work) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let result = JobResult<T>()
            let job = Job(work: makeWork(result)) { groupError in
                if let groupError {
                    continuation.resume(throwing: groupError)
                } else {
                    continuation.resume(with: result.value)
                }
            }
            condition.lock()
            guard !stopped else {
                condition.unlock()
                continuation.resume(throwing: ServerStoreError.unavailable("the store is closed"))
                return
            }
            pending.append(job)
            condition.signal()
            condition.unlock()
        }
    }

    /// Runs the jobs already queued, then stops the writer threads. Later
    /// jobs fail.
    package func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while running > 0 { condition.wait() }
        condition.unlock()
    }

    /// The next group (empty when only the check is due) and the check to
    /// run before it, waiting for either; nil once stopped with nothing queued.
    private func nextGroup() -> (group: [Job], check: Check?)? {
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty && !stopped {
            guard check != nil else {
                condition.wait()
                continue
            }
            // Not `wait(until: .distantFuture)`: Foundation traps converting it.
            guard Date() < nextCheck else { break }
            _ = condition.wait(until: nextCheck)
        }
        if pending.isEmpty && stopped {
            running -= 1
            // The check may hold what holds this queue: let it go with the last thread.
            if running == 0 { check = nil }
            condition.broadcast()
            return nil
        }
        var due: Check?
        let now = Date()
        if let check, now >= nextCheck {
            due = check
            nextCheck = now.addingTimeInterval(check.seconds)
        }
        let count = min(pending.count, groupJobsMax)
        let group = Array(pending.prefix(count))
        pending.removeFirst(count)
        return (group, due)
    }

    private func loop(thread: Int, _ step: Step) {
        while let (group, check) = nextGroup() {
            check?.run(thread)
            guard !group.isEmpty else { continue }
            let afterAnswers: (() -> Void)?
            do {
                afterAnswers = try step(thread, group)
            } catch {
                for job in group { job.finish(error) }
                continue
            }
            for job in group { job.finish(nil) }
            afterAnswers?()
        }
    }
}
