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

    /// Makes every transaction committed so far survive power loss by syncing
    /// the write-ahead log (what a `synchronous=FULL` commit does at its end),
    /// without writing a transaction of its own. Nothing to do when no log is open.
    public func syncWriteAheadLog() throws(SQLiteError) {
        guard let file = try writeAheadLogFile(), let sync = file.pointee.pMethods?.pointee.xSync else { return }
        let result = sync(file, SQLITE_SYNC_NORMAL)
        guard result == SQLITE_OK else {
            throw SQLiteError(code: result, message: "cannot sync the write-ahead log of \(path)")
        }
    }

    /// Appends zeros to the write-ahead log until it is `bytes` long, and syncs
    /// it, so later commits overwrite blocks the file already has: a
    /// `fdatasync` of a file that grew must also write its new size (~100 µs
    /// more per sync, measured on ext4). Call inside a write transaction, so
    /// no frame is appended meanwhile: the zeros lie past every frame, where
    /// SQLite's recovery stops reading. Returns the bytes added (0 when the
    /// log is that long already or none is open).
    public func extendWriteAheadLog(toBytes bytes: Int64) throws(SQLiteError) -> Int64 {
        guard isInTransaction else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "extendWriteAheadLog needs a write transaction")
        }
        guard let file = try writeAheadLogFile(), let methods = file.pointee.pMethods?.pointee,
            let fileSize = methods.xFileSize, let write = methods.xWrite, let sync = methods.xSync
        else { return 0 }
        var size: sqlite3_int64 = 0
        var result = fileSize(file, &size)
        guard result == SQLITE_OK else {
            throw SQLiteError(code: result, message: "cannot read the size of the write-ahead log of \(path)")
        }
        let start = Int64(size)
        guard start < bytes else { return 0 }
        // The unix VFS writes at most 128 KiB - 1 per call (it masks the count).
        let zeros = [UInt8](repeating: 0, count: 1 << 16)
        var offset = start
        while offset < bytes {
            let count = Int32(min(Int64(zeros.count), bytes - offset))
            result = zeros.withUnsafeBytes { write(file, $0.baseAddress, count, sqlite3_int64(offset)) }
            guard result == SQLITE_OK else {
                throw SQLiteError(code: result, message: "cannot extend the write-ahead log of \(path)")
            }
            offset += Int64(count)
        }
        result = sync(file, SQLITE_SYNC_NORMAL)
        guard result == SQLITE_OK else {
            throw SQLiteError(code: result, message: "cannot sync the write-ahead log of \(path)")
        }
        return bytes - start
    }

    /// SQLite's handle on the write-ahead log; nil when none is open.
    private func writeAheadLogFile() throws(SQLiteError) -> UnsafeMutablePointer<sqlite3_file>? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        let code = sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file)
        guard code == SQLITE_OK else { throw error(code: code, sql: nil) }
        // A file without methods is one SQLite has not opened.
        guard let file, file.pointee.pMethods != nil else { return nil }
        return file
    }

    /// Copies every page of the write-ahead log into the database file, syncs
    /// it and truncates the log (`PRAGMA wal_checkpoint(TRUNCATE)`). Returns
    /// false when another connection's read kept part of the log in use, so
    /// the log still holds commits the database file lacks.
    public func checkpointAndTruncateLog() throws(SQLiteError) -> Bool {
        let busy = try queryOne("PRAGMA wal_checkpoint(TRUNCATE)") { $0.int(0) }
        return busy == 0
    }

    /// Copies what it can of the write-ahead log into the database file
    /// without waiting for readers or writers (`PRAGMA wal_checkpoint(PASSIVE)`).
    /// Returns true when the whole log was copied (the database file then
    /// also shrinks to its page count).
    public func checkpointPassively() throws(SQLiteError) -> Bool {
        let result = try queryOne("PRAGMA wal_checkpoint(PASSIVE)") { ($0.int(0), $0.int(1), $0.int(2)) }
        guard let (busy, logFrames, copied) = result else { return true }
        return busy == 0 && logFrames == copied
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

/// A statement cache key that hashes the SQL's length and a few words from
/// its ends, not all of it: texts of up to 1.5 KB (the mount's entry queries)
/// were hashed in full on every run. Equality still compares the whole text,
/// so texts that share their ends only share a bucket.
struct StatementKey: Hashable {
    let sql: String

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.sql == rhs.sql }

    func hash(into hasher: inout Hasher) {
        let utf8 = sql.utf8
        hasher.combine(utf8.count)
        let sampled: Bool? = utf8.withContiguousStorageIfAvailable { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            guard raw.count >= 32 else {
                hasher.combine(bytes: raw)
                return true
            }
            hasher.combine(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: raw.count - 16, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self))
            return true
        }
        if sampled == nil { hasher.combine(sql) }
    }
}

/// Work a connection did: statements run, rows returned, SQLite virtual
/// machine steps (which grow with the rows a statement visits, returned or
/// not) and pages read from the page cache or the file.
public struct WorkCounters: Sendable, Equatable {
    public var statements: Int64 = 0
    public var rows: Int64 = 0
    public var virtualMachineSteps: Int64 = 0
    public var pages: Int64 = 0
    /// Pages written out (to the write-ahead log in WAL mode): what a change cost on disk.
    public var pagesWritten: Int64 = 0

    public init() {}

    /// The work done between `earlier` and this count.
    public func since(_ earlier: WorkCounters) -> WorkCounters {
        var difference = WorkCounters()
        difference.statements = statements - earlier.statements
        difference.rows = rows - earlier.rows
        difference.virtualMachineSteps = virtualMachineSteps - earlier.virtualMachineSteps
        difference.pages = pages - earlier.pages
        difference.pagesWritten = pagesWritten - earlier.pagesWritten
        return difference
    }
}
