import CSQLite
import CSQLiteBatchedLog
import Foundation

/// One SQLite connection. It is not thread-safe: give it one owner, normally a
/// `DatabaseQueue`. The handle is closed when the connection is released.
public final class Connection {
    /// How the database file is opened.
    public enum OpenMode: Sendable {
        case readOnly
        case readWrite
        /// Read-write, creating the file when missing.
        case readWriteCreate
    }

    /// `PRAGMA synchronous`: NORMAL survives a killed process in WAL mode;
    /// FULL also survives power loss.
    public enum Synchronous: String, Sendable {
        case off = "OFF"
        case normal = "NORMAL"
        case full = "FULL"
    }

    /// Options applied when the connection opens.
    public struct Options: Sendable {
        public var mode: OpenMode
        public var walJournal: Bool
        public var foreignKeys: Bool
        public var busyTimeoutMilliseconds: Int32
        public var synchronous: Synchronous
        public var statementCacheLimit: Int
        /// Batches the writes of each commit to the write-ahead log into two
        /// (`CSQLiteBatchedLog`): SQLite makes two per page.
        public var batchesLogWrites: Bool

        public init(
            mode: OpenMode = .readWriteCreate,
            walJournal: Bool = true,
            foreignKeys: Bool = true,
            busyTimeoutMilliseconds: Int32 = 5_000,
            synchronous: Synchronous = .normal,
            statementCacheLimit: Int = 128,
            batchesLogWrites: Bool = true
        ) {
            self.mode = mode
            self.walJournal = walJournal
            self.foreignKeys = foreignKeys
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.synchronous = synchronous
            self.statementCacheLimit = statementCacheLimit
            self.batchesLogWrites = batchesLogWrites
        }
    }

    let handle: OpaquePointer
    /// The path the connection was opened with.
    public let path: String
    private var statementCache: [StatementKey: Statement] = [:]
    private let statementCacheLimit: Int
    private var savepointDepth = 0
    /// `BEGIN IMMEDIATE`, `BEGIN DEFERRED`, `COMMIT` and `ROLLBACK`, prepared
    /// once: two of them run for every write, and `sqlite3_exec` parsed
    /// them again each time. Not counted in `work` (tests bound the
    /// statements a query runs, not its transaction).
    private var controlStatements = [OpaquePointer?](repeating: nil, count: ControlStatement.allCases.count)
    /// Counted by this connection's prepared statements (not `execute`).
    var work = WorkCounters()

    /// Opens the database at `path` and applies `options`.
    public init(path: String, options: Options = Options()) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch options.mode {
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        }
        if options.mode != .readOnly { Self.makePrivate(path, creating: options.mode == .readWriteCreate) }
        var opened: OpaquePointer?
        // Without the batching VFS (it could not be registered) the default one serves.
        let vfs = options.batchesLogWrites ? csqlite_batched_log_vfs() : nil
        let code = sqlite3_open_v2(path, &opened, flags, vfs)
        guard code == SQLITE_OK, let opened else {
            let message =
                opened.map { String(cString: sqlite3_errmsg($0)) }
                ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(opened)
            throw SQLiteError(code: code, message: "cannot open \(path): \(message)")
        }
        self.handle = opened
        self.path = path
        self.statementCacheLimit = options.statementCacheLimit
        sqlite3_extended_result_codes(opened, 1)
        sqlite3_busy_timeout(opened, options.busyTimeoutMilliseconds)
        if options.walJournal && options.mode != .readOnly {
            // Reading the result forces the file open, so a non-database file
            // fails here, with its path, instead of at the first query.
            let journal = try switchToWAL(busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
            guard journal?.lowercased() == "wal" else {
                throw SQLiteError(
                    code: SQLITE_ERROR, message: "cannot switch \(path) to WAL mode (got \(journal ?? "nothing"))")
            }
        } else {
            _ = try queryOne("PRAGMA schema_version") { $0.int64(0) }
        }
        try execute("PRAGMA foreign_keys=\(options.foreignKeys ? "ON" : "OFF")")
        try execute("PRAGMA synchronous=\(options.synchronous.rawValue)")
    }

    /// `PRAGMA journal_mode=WAL`, asked again while another connection holds
    /// the lock it needs. Two processes opening a fresh file at once (`serve`
    /// and `account add`, a mount and an import) both switch it, and SQLite
    /// answers one of them `SQLITE_BUSY` at once, without its busy handler
    /// (waiting could deadlock the two), so the busy timeout alone is no help.
    private func switchToWAL(busyTimeoutMilliseconds: Int32) throws(SQLiteError) -> String? {
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(busyTimeoutMilliseconds, 0)))
        while true {
            do {
                return try queryOne("PRAGMA journal_mode=WAL") { $0.string(0) }
            } catch {
                guard error.isBusy, ContinuousClock.now < deadline else { throw error }
                usleep(10_000)
            }
        }
    }

    /// A database holds private text: the file and its `-wal` and `-shm`
    /// (which SQLite creates with the database file's mode) are readable by
    /// their owner only. A missing file is made empty with mode 0600 (an
    /// empty file is an empty database); group and other bits of existing
    /// files are cleared.
    static func makePrivate(_ path: String, creating: Bool) {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        if creating {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if descriptor >= 0 { close(descriptor) }
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var status = stat()
            guard stat(file, &status) == 0, status.st_mode & 0o077 != 0, status.st_uid == geteuid() else { continue }
            chmod(file, status.st_mode & 0o700)
        }
    }

    deinit {
        statementCache.removeAll()
        for statement in controlStatements { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    func error(code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(
            code: code,
            extendedCode: sqlite3_extended_errcode(handle),
            message: String(cString: sqlite3_errmsg(handle)),
            sql: sql)
    }

    /// Runs one or more statements that take no parameters and return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        guard code == SQLITE_OK else {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(errorMessage)
            throw SQLiteError(
                code: code, extendedCode: sqlite3_extended_errcode(handle), message: message, sql: sql)
        }
    }

    /// Returns a prepared statement for `sql` from the cache, reset and ready to bind.
    public func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        let key = StatementKey(sql: sql)
        if let statement = statementCache[key] {
            statement.reset()
            return statement
        }
        let statement = try Statement(connection: self, sql: sql)
        if statementCache.count >= statementCacheLimit {
            statementCache.removeAll(keepingCapacity: true)
        }
        statementCache[key] = statement
        return statement
    }

    /// Runs a statement that returns no rows.
    public func run(_ sql: String, _ values: any SQLBindable...) throws(SQLiteError) {
        try run(sql, arguments: values)
    }

    /// Runs a statement that returns no rows, with an argument array.
    public func run(_ sql: String, arguments: [any SQLBindable]) throws(SQLiteError) {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        while try statement.step() {}
    }

    /// Runs a query and maps every row.
    public func query<T>(
        _ sql: String, _ values: any SQLBindable..., map: (Row) throws -> T
    ) throws -> [T] {
        try query(sql, arguments: values, map: map)
    }

    /// Runs a query with an argument array and maps every row.
    public func query<T>(
        _ sql: String, arguments: [any SQLBindable], map: (Row) throws -> T
    ) throws -> [T] {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        var results: [T] = []
        while try statement.step() {
            results.append(try map(statement.row))
        }
        return results
    }

    /// Runs a query and maps its first row, if any.
    public func queryOne<T>(
        _ sql: String, _ values: any SQLBindable..., map: (Row) throws -> T
    ) throws(SQLiteError) -> T? {
        try queryOne(sql, arguments: values, map: map)
    }

    /// Runs a query with an argument array and maps its first row, if any.
    public func queryOne<T>(
        _ sql: String, arguments: [any SQLBindable], map: (Row) throws -> T
    ) throws(SQLiteError) -> T? {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        guard try statement.step() else { return nil }
        do {
            return try map(statement.row)
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: SQLITE_MISMATCH, message: "cannot read row: \(error)", sql: sql)
        }
    }

    /// Visits rows one at a time without collecting them; return false to stop.
    public func forEachRow(
        _ sql: String, arguments: [any SQLBindable], _ visit: (Row) throws -> Bool
    ) throws {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        while try statement.step() {
            guard try visit(statement.row) else { break }
        }
    }

    /// The row id of the most recent successful INSERT.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Rows changed through this connection since it opened (triggers
    /// included); it never goes down, so an unchanged count means this
    /// connection changed nothing in between.
    public var totalChanges: Int64 { sqlite3_total_changes64(handle) }

    /// What this connection's prepared statements have done since it opened,
    /// and the pages it touched: a measure of a query's cost that, unlike
    /// time, a test can bound.
    public var workCounters: WorkCounters {
        // SQLite counts pages in 32 bits: taken and reset here, summed in 64.
        for counter in [SQLITE_DBSTATUS_CACHE_HIT, SQLITE_DBSTATUS_CACHE_MISS] {
            var current: Int32 = 0
            var highest: Int32 = 0
            sqlite3_db_status(handle, counter, &current, &highest, 1)
            work.pages += Int64(current)
        }
        var written: Int32 = 0
        var highest: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_WRITE, &written, &highest, 1)
        work.pagesWritten += Int64(written)
        return work
    }

    /// True while a transaction is open on this connection.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in a transaction that commits when it returns and rolls back
    /// when it throws. The outermost level uses `BEGIN IMMEDIATE`, so the write
    /// lock is taken up front and a busy database fails at the start, not at
    /// commit; nested calls become savepoints.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        if isInTransaction {
            savepointDepth += 1
            let name = "sqlitekit_\(savepointDepth)"
            defer { savepointDepth -= 1 }
            try execute("SAVEPOINT \(name)")
            do {
                let result = try body()
                try execute("RELEASE \(name)")
                return result
            } catch {
                try? execute("ROLLBACK TO \(name)")
                try? execute("RELEASE \(name)")
                throw error
            }
        }
        try run(.beginImmediate)
        do {
            let result = try body()
            try run(.commit)
            return result
        } catch {
            if isInTransaction { try? run(.rollback) }
            throw error
        }
    }

    /// Runs `body` inside a read transaction (`BEGIN DEFERRED`), so every query
    /// in it sees one snapshot.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        if isInTransaction { return try body() }
        try run(.beginDeferred)
        do {
            let result = try body()
            try run(.commit)
            return result
        } catch {
            if isInTransaction { try? run(.rollback) }
            throw error
        }
    }

    private enum ControlStatement: Int, CaseIterable {
        case beginImmediate, beginDeferred, commit, rollback

        var sql: String {
            switch self {
            case .beginImmediate: "BEGIN IMMEDIATE"
            case .beginDeferred: "BEGIN DEFERRED"
            case .commit: "COMMIT"
            case .rollback: "ROLLBACK"
            }
        }
    }

    /// Runs a transaction control statement, prepared on first use.
    private func run(_ control: ControlStatement) throws(SQLiteError) {
        let statement: OpaquePointer
        if let prepared = controlStatements[control.rawValue] {
            statement = prepared
        } else {
            var made: OpaquePointer?
            let code = sqlite3_prepare_v3(handle, control.sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &made, nil)
            guard code == SQLITE_OK, let made else { throw error(code: code, sql: control.sql) }
            controlStatements[control.rawValue] = made
            statement = made
        }
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE else {
            let failure = error(code: code, sql: control.sql)
            sqlite3_reset(statement)
            throw failure
        }
        sqlite3_reset(statement)
    }

    /// `PRAGMA user_version`, used for schema versions.
    public var userVersion: Int {
        get throws(SQLiteError) { try queryOne("PRAGMA user_version") { $0.int(0) } ?? 0 }
    }

    public func setUserVersion(_ version: Int) throws(SQLiteError) {
        try execute("PRAGMA user_version=\(version)")
    }

    /// Runs `PRAGMA integrity_check` and returns its findings; `["ok"]` means healthy.
    public func integrityCheck() throws -> [String] {
        try query("PRAGMA integrity_check") { $0.string(0) }
    }
}

@available(*, unavailable)
extension Connection: Sendable {}
