import Foundation
import SQLiteKit

/// The one write connection of a SQLite store, on its own thread. Writes
/// queued while a commit is being made durable are run together in the next
/// transaction, each in its own savepoint, and committed once (group commit):
/// one fsync acknowledges many pushes. A write that throws rolls back its
/// savepoint alone; a failed commit fails every write of the group.
///
/// Between groups, and at least every `checkSeconds` when idle, the thread
/// runs `check` on the connection (outside any transaction): the store uses
/// it to notice commits made through other connections.
///
/// `@unchecked Sendable`: `connection` is used only on the writer thread;
/// `pending`, `stopped`, `finished` and `nextCheck` are guarded by `condition`.
final class GroupCommitWriter: @unchecked Sendable {
    /// One queued write: `run` executes it inside the group's transaction and
    /// keeps its result; `finish` answers the caller once the commit is known
    /// (nil: committed), and is called exactly once, run or not.
    private struct Job {
        let run: (Connection) -> Void
        let finish: (Error?) -> Void
    }

    /// Holds a job's result between `run` and `finish`; touched only on the writer thread.
    private final class ResultBox<T> {
        var result: Result<T, Error> = .failure(ServerStoreError.failure("write did not run"))
    }

    private let connection: Connection
    private let condition = NSCondition()
    private var pending: [Job] = []
    private var stopped = false
    private var finished = false
    private var nextCheck = Date()
    private let groupWritesMax: Int
    private let check: (Connection) -> Void
    private let checkSeconds: Double

    /// `prepare` runs on the caller's thread before the writer starts;
    /// `check` only ever on the writer thread.
    init(
        path: String, groupWritesMax: Int = 512, checkSeconds: Double = 0.2, prepare: (Connection) throws -> Void,
        check: @escaping (Connection) -> Void = { _ in }
    ) throws {
        connection = try Connection(
            path: path, options: Connection.Options(mode: .readWriteCreate, synchronous: .full))
        try prepare(connection)
        self.groupWritesMax = groupWritesMax
        self.check = check
        self.checkSeconds = checkSeconds
        let thread = Thread { [self] in loop() }
        thread.name = "notesfs.server.writer"
        thread.start()
    }

    /// Runs `body` in the next group's transaction (in its own savepoint) and
    /// returns its result once the group is committed durably.
    func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            let box = ResultBox<T>()
            let job = Job(
                run: { connection in box.result = Result { try connection.transaction { try body(connection) } } },
                finish: { commitError in
                    if let commitError {
                        continuation.resume(throwing: commitError)
                    } else {
                        continuation.resume(with: box.result)
                    }
                })
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

    /// Runs the writes already queued, then stops the thread. Later writes fail.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while pending.isEmpty && !stopped && Date() < nextCheck { _ = condition.wait(until: nextCheck) }
            if pending.isEmpty && stopped {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let count = min(pending.count, groupWritesMax)
            let group = Array(pending.prefix(count))
            pending.removeFirst(count)
            let now = Date()
            let checking = now >= nextCheck
            if checking { nextCheck = now.addingTimeInterval(checkSeconds) }
            condition.unlock()
            if checking { check(connection) }
            if !group.isEmpty { runGroup(group) }
        }
    }

    private func runGroup(_ group: [Job]) {
        var commitError: Error?
        do {
            try connection.execute("BEGIN IMMEDIATE")
            // `transaction` inside each job nests, so it becomes a savepoint.
            for job in group {
                // SQLite rolls the whole transaction back on some errors (a
                // full disk, I/O); then nothing of the group may commit.
                guard connection.isInTransaction else {
                    throw ServerStoreError.unavailable("the group transaction was rolled back by SQLite (a full disk or an I/O error)")
                }
                job.run(connection)
            }
            // The last job may have been the one SQLite rolled back for: a
            // COMMIT now would fail with "no transaction is active" and read
            // as a bug, when it is a full disk or an I/O error.
            guard connection.isInTransaction else {
                throw ServerStoreError.unavailable("the group transaction was rolled back by SQLite (a full disk or an I/O error)")
            }
            try connection.execute("COMMIT")
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            commitError = SQLiteServerStore.storeError(error)
        }
        for job in group { job.finish(commitError) }
    }
}
