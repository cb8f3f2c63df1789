import CPostgres
import Foundation

/// One libpq connection. Owns its `PGconn` and closes it in `deinit`. Not
/// Sendable: a connection belongs to one thread or serial queue at a time
/// (the pool hands it out that way), and every call blocks that thread.
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// Statements prepared on this connection: SQL text → statement name.
    /// Each distinct SQL text is parsed and planned once per connection.
    private var prepared: [String: String] = [:]
    /// Prepared statements kept at most; beyond it statements run unprepared.
    public static let preparedStatementsMax = 256

    /// A server setting made for one session (`SET name = value`).
    public struct SessionSetting: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Connects. `conninfo` is a libpq connection string (`host=… dbname=…`
    /// or a `postgresql://` URI); its settings win over the defaults here.
    /// `settings` are then made for the session, over any that `conninfo`'s
    /// `options` made. With `keepaliveIdleSeconds`, TCP keepalives probe an
    /// idle connection after that long, then every half of it, three times,
    /// so a peer that vanished without closing (its host died) is noticed.
    public init(
        conninfo: String, applicationName: String = "notesfs", settings: [SessionSetting] = [],
        connectTimeoutSeconds: Int = 5, keepaliveIdleSeconds: Int? = nil
    ) throws(PostgresError) {
        var keywords = ["connect_timeout", "application_name"]
        var values = [String(connectTimeoutSeconds), applicationName]
        if let idle = keepaliveIdleSeconds {
            keywords += ["keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"]
            values += ["1", String(max(1, idle)), String(max(1, idle / 2)), "3"]
        }
        keywords.append("dbname")
        values.append(conninfo)
        let connection: OpaquePointer? = Self.withCStrings(keywords) { keywordPointers in
            Self.withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection else {
            throw PostgresError(.connection, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(.connection, message: message)
        }
        handle = connection
        // Server notices ("already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        if !settings.isEmpty {
            let calls = settings.indices.map { "set_config($\($0 * 2 + 1), $\($0 * 2 + 2), false)" }
            try execute(
                "SELECT " + calls.joined(separator: ", "),
                arguments: settings.flatMap { [PostgresValue.text($0.name), .text($0.value)] })
        }
    }

    deinit { PQfinish(handle) }

    /// True once the connection is lost; the owner should drop it and connect anew.
    public var isBroken: Bool { poisoned || PQstatus(handle) != CONNECTION_OK }
    /// Set when the connection's protocol state is unknown (a pipeline broke
    /// midway): it must not be used again.
    private var poisoned = false

    /// True inside a transaction block (or a failed one).
    public var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// True inside a transaction that an error aborted: only `ROLLBACK` (or
    /// `ROLLBACK TO SAVEPOINT`) works until it ends.
    public var isInFailedTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INERROR }

    /// Runs one statement with `arguments` as its `$1, $2…` parameters and
    /// returns its rows in binary format.
    @discardableResult
    public func execute(_ sql: String, _ arguments: any PostgresBindable...) throws(PostgresError) -> PostgresResult {
        try execute(sql, arguments: arguments.map(\.postgresValue))
    }

    @discardableResult
    public func execute(_ sql: String, arguments: [PostgresValue]) throws(PostgresError) -> PostgresResult {
        let parameters = Parameters(arguments)
        defer { parameters.deallocate() }
        let name = try preparedName(sql, parameters)
        let result: OpaquePointer? = parameters.withValues { values in
            if let name {
                PQexecPrepared(handle, name, parameters.count, values, parameters.lengths, parameters.formats, 1)
            } else {
                PQexecParams(
                    handle, sql, parameters.count, parameters.types, values, parameters.lengths, parameters.formats, 1)
            }
        }
        return try check(result, sql: sql)
    }

    /// One statement of a `pipeline`.
    public struct Statement: Sendable {
        public var sql: String
        public var arguments: [PostgresValue]

        public init(_ sql: String, _ arguments: [PostgresValue] = []) {
            self.sql = sql
            self.arguments = arguments
        }
    }

    /// Parameter values never read above this many bytes in one pipeline:
    /// larger ones go statement by statement, because a blocking connection
    /// that sends much while the server answers much can stall both sides.
    public static let pipelineArgumentBytesMax = 256 * 1024

    /// Runs `statements` in order in one round trip (libpq pipeline mode) and
    /// returns their results. Each statement starts after the previous one
    /// finished, so under READ COMMITTED each still takes its own snapshot.
    /// The first error is thrown once the pipeline is drained; statements
    /// after it did not run. Inside a transaction block an error leaves the
    /// transaction aborted, as with `execute`.
    public func pipeline(_ statements: [Statement]) throws(PostgresError) -> [PostgresResult] {
        let argumentBytes = statements.reduce(0) { $0 + Parameters.size($1.arguments) }
        if statements.count < 2 || argumentBytes > Self.pipelineArgumentBytesMax {
            var results: [PostgresResult] = []
            for statement in statements { results.append(try execute(statement.sql, arguments: statement.arguments)) }
            return results
        }
        let all = statements.map { Parameters($0.arguments) }
        defer { all.forEach { $0.deallocate() } }
        // Prepared (once per connection) before the pipeline starts.
        var names: [String?] = []
        for (statement, parameters) in zip(statements, all) { names.append(try preparedName(statement.sql, parameters)) }
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(.connection, message: Self.message(PQerrorMessage(handle)))
        }
        for index in statements.indices {
            let parameters = all[index]
            let sent: Int32 = parameters.withValues { values in
                if let name = names[index] {
                    PQsendQueryPrepared(
                        handle, name, parameters.count, values, parameters.lengths, parameters.formats, 1)
                } else {
                    PQsendQueryParams(
                        handle, statements[index].sql, parameters.count, parameters.types, values, parameters.lengths,
                        parameters.formats, 1)
                }
            }
            guard sent == 1 else { throw brokenPipeline(sql: statements[index].sql) }
        }
        guard PQpipelineSync(handle) == 1 else { throw brokenPipeline(sql: nil) }
        var results: [PostgresResult] = []
        var firstError: PostgresError?
        for statement in statements {
            guard let result = PQgetResult(handle) else { throw brokenPipeline(sql: statement.sql) }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_ABORTED {
                PQclear(result)
            } else {
                do {
                    results.append(try check(result, sql: statement.sql))
                } catch {
                    if firstError == nil { firstError = error }
                }
            }
            // Each statement's results end with a NULL.
            if let extra = PQgetResult(handle) {
                PQclear(extra)
                throw brokenPipeline(sql: statement.sql)
            }
        }
        guard let sync = PQgetResult(handle) else { throw brokenPipeline(sql: nil) }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(handle) == 1 else { throw brokenPipeline(sql: nil) }
        if let firstError { throw firstError }
        return results
    }

    /// A pipeline that went wrong midway cannot be resumed: the connection
    /// is marked broken so the owner drops it (a transaction on it rolls back).
    private func brokenPipeline(sql: String?) -> PostgresError {
        let message = Self.message(PQerrorMessage(handle))
        poisoned = true
        return PostgresError(.connection, message: "pipeline failed: \(message)", sql: sql)
    }

    /// The name `sql` is prepared under on this connection, preparing it on
    /// first use; nil once `preparedStatementsMax` statements are prepared.
    private func preparedName(_ sql: String, _ parameters: Parameters) throws(PostgresError) -> String? {
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.preparedStatementsMax else { return nil }
        let fresh = "notesfs_\(prepared.count)"
        _ = try check(PQprepare(handle, fresh, sql, parameters.count, parameters.types), sql: sql)
        prepared[sql] = fresh
        return fresh
    }

    /// Runs SQL text that takes no parameters, possibly several statements
    /// (migrations, `LISTEN`). Never pass it input from outside.
    public func executeScript(_ sql: String) throws(PostgresError) {
        _ = try check(PQexec(handle, sql), sql: sql)
    }

    private func check(_ result: OpaquePointer?, sql: String) throws(PostgresError) -> PostgresResult {
        guard let result else {
            throw PostgresError(.connection, message: Self.message(PQerrorMessage(handle)), sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK where sql == "COMMIT" && Self.rolledBack(result):
            // PostgreSQL answers COMMIT of an aborted transaction with success
            // and the tag ROLLBACK: nothing was committed, so it is an error.
            PQclear(result)
            throw PostgresError(
                .server, sqlState: "25P02", message: "COMMIT rolled back: an earlier statement aborted the transaction",
                sql: sql)
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return PostgresResult(handle: result, sql: sql)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = Self.message(PQresultErrorMessage(result))
            PQclear(result)
            if isBroken {
                throw PostgresError(.connection, sqlState: state, message: message, sql: sql)
            }
            throw PostgresError(.server, sqlState: state, message: message, sql: sql)
        }
    }

    /// True when a statement's command tag is `ROLLBACK`.
    private static func rolledBack(_ result: OpaquePointer) -> Bool {
        guard let tag = PQcmdStatus(result) else { return false }
        return strcmp(tag, "ROLLBACK") == 0
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when
    /// it throws (and rethrows).
    public func transaction<T>(_ begin: String = "BEGIN", _ body: () throws -> T) throws -> T {
        try execute(begin)
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Rolls back an open transaction, ignoring errors (the connection may be gone).
    public func rollbackQuietly() {
        guard !isBroken, isInTransaction else { return }
        _ = try? execute("ROLLBACK")
    }

    /// `name` quoted as an SQL identifier, for the few statements that cannot
    /// take parameters (`LISTEN`).
    public func quoteIdentifier(_ name: String) throws(PostgresError) -> String {
        guard let quoted = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw PostgresError(.decoding, message: Self.message(PQerrorMessage(handle)))
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }

    /// A notification received by `LISTEN`.
    public struct Notification: Sendable, Hashable {
        public var channel: String
        public var payload: String
        public var senderPID: Int32
    }

    /// What `waitForNotifications` saw.
    public enum WaitOutcome {
        case notifications([Notification])
        case timedOut
        case woken
    }

    /// Waits up to `timeoutMilliseconds` for notifications, or until `wakeFD`
    /// is readable. Throws `.connection` when the connection is lost.
    public func waitForNotifications(timeoutMilliseconds: Int32, wakeFD: Int32) throws(PostgresError) -> WaitOutcome {
        var found = try drainNotifications()
        if !found.isEmpty { return .notifications(found) }
        let ready = cpostgres_wait_readable_or_woken(handle, wakeFD, timeoutMilliseconds)
        if ready == 2 { return .woken }
        if ready == 0 { return .timedOut }
        if ready < 0 && errno != EINTR {
            throw PostgresError(.connection, message: "poll failed: errno \(errno)")
        }
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(.connection, message: Self.message(PQerrorMessage(handle)))
        }
        found = try drainNotifications()
        return found.isEmpty ? .timedOut : .notifications(found)
    }

    private func drainNotifications() throws(PostgresError) -> [Notification] {
        var found: [Notification] = []
        while let notice = PQnotifies(handle) {
            found.append(
                Notification(
                    channel: String(cString: notice.pointee.relname), payload: String(cString: notice.pointee.extra),
                    senderPID: notice.pointee.be_pid))
            PQfreemem(notice)
        }
        if isBroken { throw PostgresError(.connection, message: Self.message(PQerrorMessage(handle))) }
        return found
    }

    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "no message" }
        return String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func withCStrings<R>(
        _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R
    ) -> R {
        let copies = strings.map { strdup($0) } + [nil]
        defer { copies.forEach { free($0) } }
        return copies.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { buffer in
            body(buffer.baseAddress)
        }
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}

/// One statement's parameters in libpq's form: types, formats, lengths and
/// buffers it owns until `deallocate`.
private struct Parameters {
    var types: [UInt32] = []
    var formats: [Int32] = []
    var lengths: [Int32] = []
    var buffers: [UnsafeMutablePointer<CChar>?] = []
    var count: Int32 { Int32(buffers.count) }

    /// Bytes the values of `arguments` take on the wire, about.
    static func size(_ arguments: [PostgresValue]) -> Int {
        arguments.reduce(0) { total, argument in
            switch argument {
            case .null: total
            case .text(let text): total + text.utf8.count
            case .int, .bool: total + 20
            case .bytes(let data): total + data.count
            case .array(let array): total + array.encoded.count
            }
        }
    }

    init(_ arguments: [PostgresValue]) {
        func copy(_ bytes: some Collection<UInt8>) -> UnsafeMutablePointer<CChar> {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, bytes.count))
            buffer.withMemoryRebound(to: UInt8.self, capacity: max(1, bytes.count)) { bytesBuffer in
                _ = UnsafeMutableBufferPointer(start: bytesBuffer, count: bytes.count).initialize(from: bytes)
            }
            return buffer
        }
        for argument in arguments {
            switch argument {
            case .null:
                types.append(0)
                formats.append(0)
                lengths.append(0)
                buffers.append(nil)
            case .text(let text):
                let utf8 = Array(text.utf8) + [0]
                types.append(0)
                formats.append(0)
                lengths.append(Int32(utf8.count - 1))
                buffers.append(copy(utf8))
            case .int(let value):
                let utf8 = Array(String(value).utf8) + [0]
                types.append(20)
                formats.append(0)
                lengths.append(Int32(utf8.count - 1))
                buffers.append(copy(utf8))
            case .bool(let value):
                types.append(16)
                formats.append(0)
                lengths.append(1)
                buffers.append(copy(value ? [UInt8(ascii: "t"), 0] : [UInt8(ascii: "f"), 0]))
            case .bytes(let data):
                types.append(17)
                formats.append(1)
                lengths.append(Int32(data.count))
                buffers.append(copy(data))
            case .array(let array):
                types.append(array.arrayType)
                formats.append(1)
                lengths.append(Int32(array.encoded.count))
                buffers.append(copy(array.encoded))
            }
        }
    }

    func withValues<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        buffers.withUnsafeBufferPointer { values in
            values.withMemoryRebound(to: UnsafePointer<CChar>?.self) { body($0.baseAddress) }
        }
    }

    func deallocate() { buffers.forEach { $0?.deallocate() } }
}
