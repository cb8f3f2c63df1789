import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// Group commit for the PostgreSQL store: pushes queued while a group is
/// being written run together in the next transaction, one durable `COMMIT`
/// for all of them, on a writer thread with a connection of its own.
///
/// A group runs in READ COMMITTED, in DESIGN.md's lock order:
/// 1. the account rows of every push, in ascending account order, in one
///    `SELECT … ORDER BY account_id FOR UPDATE` (so groups in different
///    processes never deadlock on accounts: each waits only for higher ids);
/// 2. the idempotency rows of every push (one statement), then the entity
///    rows of every push (one statement, no row locks: every writer of an
///    entity row holds its account row first, so the account locks cover
///    them). Which change ids and rows a push needs is learned by a dry run
///    of its body that stops at the lookup. Each push still sees account row
///    → idempotency → entities;
/// 3. every push's rows (updated where the group found them, else
///    inserted), answers and counters in one statement (`unnest` arrays),
///    then `COMMIT`.
///
/// Pushes keep their writes in memory until step 3, so a push whose body
/// throws (a `change_id_reused` 409, a missing account) has sent nothing and
/// is dropped alone; later pushes of the same account see the earlier
/// pushes' rows, answers and counter through the group's overlay, exactly as
/// if each had committed. A statement error the group cannot attribute
/// (anything but a deadlock, serialization failure or lost connection) rolls
/// the group back and runs it again in *isolated* mode: each push in its own
/// `SAVEPOINT`, written at once, so one failing push rolls back alone. A
/// deadlock or serialization failure reruns the whole group (nothing of it
/// stayed; idempotency records are written in the same transaction, so
/// nothing applies twice); a failed `COMMIT` fails every push of the group.
///
/// The queueing (collecting pushes, answering each once its group's outcome
/// is known) is `GroupCommitQueue`'s; this type runs a group. docs/postgres.md
/// ("The push path, as a state machine") draws the steps and transitions of
/// `runGroup`.
///
/// `@unchecked Sendable`: each writer thread uses only its own entry of
/// `connections`, and `stop` empties them only once every thread has ended;
/// the rest is immutable.
final class PostgresGroupWriter: @unchecked Sendable {
    /// One queued push: `run` executes the body against a transaction and
    /// keeps its result (returning the body's error, if any).
    struct Push {
        let account: AccountID
        let run: (any PushTransaction) -> (any Error)?
        /// Replaces the kept result with a failure (its writes did not make it).
        let failed: (any Error) -> Void
        /// The pushing device's own new versions, read from the kept result.
        let ownChanges: () -> OwnChanges?
    }

    private typealias Job = GroupCommitQueue<Push>.Job

    /// A writer thread's connection, made on first use and replaced when it breaks.
    private final class WriterConnection {
        var connection: PostgresConnection?
    }

    /// Raised inside an optimistic group when a statement failed in a way
    /// that cannot be pinned on one push: rerun the group isolated.
    private struct NeedsIsolation: Error {
        let cause: any Error
    }

    private let conninfo: String
    private let settings: [PostgresConnection.SessionSetting]
    private let queue: GroupCommitQueue<Push>
    /// One per writer thread, indexed by the thread's number.
    private let connections: [WriterConnection]
    private let attemptsMax: Int
    private let onCommit: @Sendable ([RemoteCommit]) -> Void

    /// Starts `writers` threads (each with one connection, made on first
    /// use). `onCommit` gets what a committed group applied: one commit per
    /// push that knows its device's own versions, one per other account.
    init(
        conninfo: String, settings: [PostgresConnection.SessionSetting], writers: Int, groupPushesMax: Int,
        attemptsMax: Int, onCommit: @escaping @Sendable ([RemoteCommit]) -> Void
    ) {
        precondition(writers >= 1 && groupPushesMax >= 1 && attemptsMax >= 1, "group writer limits must be positive")
        self.conninfo = conninfo
        self.settings = settings
        self.attemptsMax = attemptsMax
        self.onCommit = onCommit
        queue = GroupCommitQueue(groupJobsMax: groupPushesMax)
        connections = (0..<writers).map { _ in WriterConnection() }
        queue.start(threadNames: (0..<writers).map { "notesfs.postgres.writer.\($0)" }) { [self] thread, group in
            try runGroup(group, &connections[thread].connection)
        }
    }

    /// Runs `body` for `account` in the next group's transaction and returns
    /// its result once that group's `COMMIT` returned.
    func push<T: Sendable>(
        account: AccountID, ownChanges: @escaping @Sendable (T) -> OwnChanges?,
        _ body: @escaping @Sendable (any PushTransaction) throws -> T
    ) async throws -> T {
        do {
            return try await queue.submit { result in
                Push(
                    account: account,
                    run: { transaction in
                        result.value = Result { try body(transaction) }
                        if case .failure(let error) = result.value { return error }
                        return nil
                    },
                    failed: { error in result.value = .failure(error) },
                    ownChanges: { (try? result.value.get()).flatMap(ownChanges) })
            }
        } catch {
            // Errors of the push body (the processor's own) pass through.
            throw PostgresServerStore.storeError(error)
        }
    }

    /// Runs the pushes already queued, stops the threads and closes their
    /// connections. Later pushes fail.
    func stop() {
        queue.stop()
        // Every writer thread has ended: nothing uses these any more.
        for writer in connections { writer.connection = nil }
    }

    // MARK: One group

    /// Runs one group to its end: committed (returning the notification of
    /// other processes, to send once every push is answered) or failed
    /// (throwing the error every push of the group gets).
    private func runGroup(_ arrived: [Job], _ connection: inout PostgresConnection?) throws -> (() -> Void)? {
        // Ascending account order (stable: a client's pushes keep their order).
        let jobs = arrived.enumerated()
            .sorted { ($0.element.work.account.rawValue, $0.offset) < ($1.element.work.account.rawValue, $1.offset) }
            .map(\.element)
        var isolated = false
        var attempt = 0
        var reconnected = false
        while true {
            attempt += 1
            var current: PostgresConnection?
            do {
                let open: PostgresConnection
                if let connection {
                    open = connection
                } else {
                    open = try PostgresConnection(
                        conninfo: conninfo, applicationName: "notesfs-writer", settings: settings)
                    connection = open
                }
                current = open
                let applied = isolated ? try runIsolated(jobs, open) : try runOptimistic(jobs, open)
                let commits = Self.commits(applied: applied, jobs)
                return commits.isEmpty ? nil : { [onCommit] in onCommit(commits) }
            } catch let error as NeedsIsolation {
                current?.rollbackQuietly()
                if current?.isBroken == true { connection = nil }
                guard !isolated else {
                    throw PostgresServerStore.storeError(error.cause)
                }
                isolated = true
                attempt -= 1
            } catch {
                current?.rollbackQuietly()
                let postgres = error as? PostgresError
                if postgres?.isRetryableTransaction == true && attempt < attemptsMax {
                    usleep(UInt32.random(in: 1_000...(5_000 * UInt32(attempt))))
                    continue
                }
                if current?.isBroken == true {
                    connection = nil
                    // Once more on a fresh connection: safe even if the lost
                    // COMMIT went through (the rerun finds every change id
                    // remembered and returns the first answers).
                    if !reconnected {
                        reconnected = true
                        continue
                    }
                }
                throw PostgresServerStore.storeError(error)
            }
        }
    }

    /// What to tell other processes of a committed group: each push that
    /// knows its device's own versions, and each other account with new versions.
    private static func commits(applied: [AccountID], _ jobs: [Job]) -> [RemoteCommit] {
        guard !applied.isEmpty else { return [] }
        var commits: [RemoteCommit] = []
        var told = Set<AccountID>()
        for job in jobs {
            guard let own = job.work.ownChanges() else { continue }
            commits.append(RemoteCommit(account: job.work.account, own: own))
            told.insert(job.work.account)
        }
        for account in applied where !told.contains(account) { commits.append(RemoteCommit(account: account)) }
        return commits
    }

    /// The statement locking the account rows of `jobs` in ascending order
    /// (ORDER BY runs below the row locking, so rows are locked in that order).
    private static func lockAccountsStatement(_ jobs: [Job]) -> PostgresConnection.Statement {
        let accounts = Array(Set(jobs.map(\.work.account.rawValue))).sorted()
        return PostgresConnection.Statement(
            """
            SELECT account_id, counter FROM accounts WHERE account_id = ANY($1)
            ORDER BY account_id FOR UPDATE
            """, [.array(.int64(accounts))])
    }

    private static func counters(_ rows: PostgresResult) throws -> [AccountID: Int64] {
        var counters: [AccountID: Int64] = [:]
        for row in 0..<rows.rowCount {
            counters[AccountID(try rows.int64(row, 0))] = try rows.int64(row, 1)
        }
        return counters
    }

    /// The fast path, two round trips for the whole group:
    /// `BEGIN`, account locks, idempotency rows and entity locks in one
    /// pipeline; the pushes in memory; the write statement and `COMMIT` in
    /// a second. Returns the accounts that got new versions.
    private func runOptimistic(_ jobs: [Job], _ connection: PostgresConnection) throws -> [AccountID] {
        // A dry run of every body, stopped at its entity lookup, learns which
        // change ids and entity rows it will ask for (all its rows, even of
        // changes that turn out to be replays: locking a row of an account
        // already locked costs little).
        let probeGroup = PostgresGroupOverlay(counters: [:])
        var asked: [(AccountID, [ChangeID])] = []
        var wanted: [(AccountID, [EntityRef])] = []
        for job in jobs {
            let probe = PostgresGroupPushTransaction(
                connection: connection, account: job.work.account, group: probeGroup, stage: .probe)
            _ = job.work.run(probe)
            asked.append((job.work.account, probe.askedChangeIds))
            wanted.append((job.work.account, probe.askedRefs))
        }
        let overlay = PostgresGroupOverlay(counters: [:])
        var statements = [PostgresConnection.Statement("BEGIN"), Self.lockAccountsStatement(jobs)]
        let recordsStatement = overlay.prefetchRecordsStatement(asked)
        let entitiesStatement = overlay.prefetchEntitiesStatement(wanted)
        statements += [recordsStatement, entitiesStatement].compactMap { $0 }
        let results: [PostgresResult]
        do {
            results = try connection.pipeline(statements)
        } catch {
            throw Self.isolatingUnlessRetryable(error)
        }
        overlay.counters = try Self.counters(results[1])
        var next = 2
        if recordsStatement != nil {
            try overlay.readRecords(results[next])
            next += 1
        }
        if entitiesStatement != nil { try overlay.readEntities(results[next]) }
        for job in jobs {
            let transaction = PostgresGroupPushTransaction(
                connection: connection, account: job.work.account, group: overlay, stage: .run)
            if let error = job.work.run(transaction) {
                if let error = error as? PostgresError, error.isRetryableTransaction || error.isUnavailable {
                    throw error
                }
                // A statement failed (the transaction is aborted) or a
                // body error came with one: isolate the pushes.
                if error is PostgresError || connection.isInFailedTransaction {
                    throw NeedsIsolation(cause: error)
                }
                continue  // nothing of this push was sent: it is dropped alone
            }
            overlay.merge(transaction)
        }
        let write = overlay.writeStatement()
        do {
            _ = try connection.pipeline([write, PostgresConnection.Statement("COMMIT")].compactMap { $0 })
        } catch {
            // A failed COMMIT fails the group; a failed write means COMMIT
            // did not run: isolate the pushes.
            if error.sql == "COMMIT" { throw error }
            throw Self.isolatingUnlessRetryable(error)
        }
        return overlay.appliedAccounts
    }

    /// `error` itself when rerunning the group as it is may work (deadlock,
    /// serialization failure, lost connection), else a request to isolate.
    private static func isolatingUnlessRetryable(_ error: PostgresError) -> any Error {
        error.isRetryableTransaction || error.isUnavailable ? error : NeedsIsolation(cause: error)
    }

    /// Locks the account rows of `jobs` in ascending order and returns their counters.
    private func lockAccounts(_ jobs: [Job], _ connection: PostgresConnection) throws -> [AccountID: Int64] {
        let statement = Self.lockAccountsStatement(jobs)
        return try Self.counters(try connection.execute(statement.sql, arguments: statement.arguments))
    }

    /// The careful path: each push in its own savepoint, written at once.
    private func runIsolated(_ jobs: [Job], _ connection: PostgresConnection) throws -> [AccountID] {
        try connection.execute("BEGIN")
        _ = try lockAccounts(jobs, connection)
        var applied = Set<AccountID>()
        for job in jobs {
            try connection.execute("SAVEPOINT notesfs_push")
            let transaction = PostgresPushTransaction(connection: connection, account: job.work.account)
            var error = job.work.run(transaction)
            if error == nil {
                do {
                    try transaction.flush()
                } catch let flushError {
                    error = flushError
                }
            }
            if let error {
                if let error = error as? PostgresError, error.isRetryableTransaction || error.isUnavailable {
                    throw error
                }
                if connection.isBroken { throw error }
                job.work.failed(error)
                try connection.execute("ROLLBACK TO SAVEPOINT notesfs_push")
            } else if transaction.counterChanged {
                applied.insert(job.work.account)
            }
            try connection.execute("RELEASE SAVEPOINT notesfs_push")
        }
        try connection.execute("COMMIT")
        return applied.sorted { $0.rawValue < $1.rawValue }
    }
}
