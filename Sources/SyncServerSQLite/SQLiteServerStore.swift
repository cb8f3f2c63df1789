import Foundation
import NotesModel
import SQLiteKit
import Synchronization
import SyncProtocol
import SyncServer

/// The embedded `ServerStore`: one SQLite file in WAL mode. One writer thread
/// with `synchronous=FULL` commits concurrent pushes together (group commit);
/// a few read connections serve the feed, the index and token checks.
///
/// Locking: the writer's `BEGIN IMMEDIATE` holds the database write lock from
/// the first statement to `COMMIT`, which covers the account row, the
/// idempotency rows and the entities in DESIGN.md's order; readers see only
/// committed snapshots, so the counter and the rows it stamped appear together
/// and the feed never shows a gap.
public final class SQLiteServerStore: ServerStore {
    /// Tuning for one store.
    public struct Options: Sendable {
        /// Read connections (each has its own queue).
        public var readers: Int
        /// Writes committed together at most.
        public var groupWritesMax: Int

        public init(readers: Int = 3, groupWritesMax: Int = 512) {
            self.readers = readers
            self.groupWritesMax = groupWritesMax
        }
    }

    /// The database file.
    public let path: String
    private let writer: GroupCommitWriter
    private let readers: [SQLiteReader]
    private let nextReader = Atomic<Int>(0)
    private let currentEpoch: Mutex<String>
    private let closed = Atomic<Bool>(false)
    /// Never changes once made (`AccountKey`).
    private let installationSecretValue: String
    /// Where commits are reported (`CommitReporting`).
    let commitReports: SQLiteCommitReports

    /// Opens (creating when missing) the store at `path` and migrates its schema.
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        var epoch = ""
        var secret = ""
        let reports = SQLiteCommitReports()
        commitReports = reports
        do {
            writer = try GroupCommitWriter(
                path: path, groupWritesMax: options.groupWritesMax, checkSeconds: Self.otherWritersCheckSeconds,
                prepare: { connection in
                    try SQLiteServerSchema.migrate(connection)
                    epoch = try SQLiteServerSchema.epoch(connection)
                    secret = try SQLiteServerSchema.installationSecret(connection)
                    reports.checkOtherWriters(connection)
                }, check: { connection in reports.checkOtherWriters(connection) })
            readers = try (0..<max(1, options.readers)).map { index in
                try SQLiteReader(path: path, label: "notesfs.server.reader.\(index)")
            }
        } catch {
            throw Self.storeError(error)
        }
        currentEpoch = Mutex(epoch)
        installationSecretValue = secret
    }

    /// The data file inside a server data directory.
    public static func databasePath(inDirectory directory: String) -> String {
        URL(fileURLWithPath: directory).appendingPathComponent("server.sqlite").path
    }

    private var reader: SQLiteReader {
        let index = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        return readers[index % readers.count]
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw ServerStoreError.unavailable("the store is closed") }
        do {
            return try await reader.read(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// `read` for a caller outside any task: `completion` runs once, on the
    /// reader's queue.
    func read<T: Sendable>(
        _ body: @escaping @Sendable (Connection) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        guard !closed.load(ordering: .acquiring) else {
            completion(.failure(ServerStoreError.unavailable("the store is closed")))
            return
        }
        reader.read(body) { result in completion(result.mapError(Self.storeError)) }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        do {
            return try await writer.write(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Turns any error into a `ServerStoreError`, so nothing above the store
    /// sees SQLite.
    static func storeError(_ error: any Error) -> any Error {
        if error is ServerStoreError { return error }
        if let error = error as? SQLiteError {
            if error.isBusy || error.isDiskFull {
                return ServerStoreError.unavailable(error.description)
            }
            return ServerStoreError.failure(error.description)
        }
        // Errors thrown by a push body (the processor's own) pass through.
        return error
    }

    // MARK: ServerStore

    public func epoch() async throws -> String {
        currentEpoch.withLock { $0 }
    }

    public func installationSecret() async throws -> String { installationSecretValue }

    public func newEpoch(now: Date) async throws -> String {
        let epoch = try await write { connection in
            let epoch = ServerEpoch.make()
            try connection.run("UPDATE server_meta SET value = ? WHERE key = 'epoch'", epoch)
            try connection.run(
                "UPDATE accounts SET counter = CASE WHEN ?2 > counter THEN ?2 ELSE counter + ?1 END", ServerEpoch.minimumGap,
                ServerEpoch.clockFloor(now: now))
            return epoch
        }
        currentEpoch.withLock { $0 = epoch }
        commitReports.report(.unknown)
        return epoch
    }

    public func counterTotal() async throws -> Int64 {
        try await read { connection in
            try connection.queryOne("SELECT ifnull(sum(counter), 0) FROM accounts", map: { $0.int64(0) }) ?? 0
        }
    }

    public func push<Result: Sendable>(
        account: AccountID, _ body: @escaping @Sendable (any PushTransaction) throws -> Result
    ) async throws -> Result {
        // Also when it failed: a commit whose outcome is unknown may have happened.
        defer { commitReports.report(.local(account)) }
        return try await write { connection in
            try body(SQLitePushTransaction(connection: connection, account: account))
        }
    }

    public func close() async {
        closed.store(true, ordering: .releasing)
        writer.stop()
    }
}
