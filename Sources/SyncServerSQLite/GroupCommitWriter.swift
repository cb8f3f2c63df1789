import Foundation
import SQLiteKit
import SyncServer

/// The one write connection of a SQLite store, on its own thread. Writes
/// queued while a commit is being made durable are run together in the next
/// transaction, each in its own savepoint, and committed once (group commit,
/// queued by `GroupCommitQueue`): one fsync acknowledges many pushes. A write
/// that throws rolls back its savepoint alone; a failed commit fails every
/// write of the group.
///
/// Between groups, and at least every `checkSeconds` when idle, the thread
/// runs `check` on the connection (outside any transaction): the store uses
/// it to notice commits made through other connections.
///
/// `@unchecked Sendable`: `connection` is used only on the writer thread.
final class GroupCommitWriter: @unchecked Sendable {
    /// One queued write: runs inside the group's transaction and keeps its result.
    typealias Write = (Connection) -> Void

    private let connection: Connection
    private let queue: GroupCommitQueue<Write>

    /// `prepare` runs on the caller's thread before the writer starts;
    /// `check` only ever on the writer thread.
    init(
        path: String, groupWritesMax: Int = 512, checkSeconds: Double = 0.2, prepare: (Connection) throws -> Void,
        check: @escaping @Sendable (Connection) -> Void = { _ in }
    ) throws {
        connection = try Connection(
            path: path, options: Connection.Options(mode: .readWriteCreate, synchronous: .full))
        // Each write's savepoint keeps the pages it changes in a statement
        // journal, which SQLite spills to a temporary file past 64 KiB: every
        // group wrote about as many bytes there as into the write-ahead log.
        // In memory it costs a copy per page and no system call.
        try connection.execute("PRAGMA temp_store = MEMORY")
        try prepare(connection)
        queue = GroupCommitQueue(groupJobsMax: groupWritesMax)
        // Only the writer thread runs the check, so it may use the connection.
        // Not `self`: the queue keeps the check, and `self` keeps the queue.
        nonisolated(unsafe) let writerConnection = connection
        let periodic = GroupCommitQueue<Write>.Check(every: checkSeconds) { _ in check(writerConnection) }
        queue.start(threadNames: ["notesfs.server.writer"], check: periodic) { [self] _, group in
            try runGroup(group)
            return nil
        }
    }

    /// Runs `body` in the next group's transaction (in its own savepoint) and
    /// returns its result once the group is committed durably.
    func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await queue.submit { result in
            { connection in result.value = Result { try connection.transaction { try body(connection) } } }
        }
    }

    /// Runs the writes already queued, then stops the thread. Later writes fail.
    func stop() {
        queue.stop()
    }

    private func runGroup(_ group: [GroupCommitQueue<Write>.Job]) throws {
        do {
            try connection.execute("BEGIN IMMEDIATE")
            // `transaction` inside each job nests, so it becomes a savepoint.
            for job in group {
                // SQLite rolls the whole transaction back on some errors (a
                // full disk, I/O); then nothing of the group may commit.
                guard connection.isInTransaction else {
                    throw ServerStoreError.unavailable("the group transaction was rolled back by SQLite (a full disk or an I/O error)")
                }
                job.work(connection)
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
            throw SQLiteServerStore.storeError(error)
        }
    }
}
