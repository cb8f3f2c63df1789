import Foundation
import LoopbackHTTP
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer
import SyncServerPostgres
import Synchronization
import TestSupport

/// Several real `notesfs serve --postgres` processes on one PostgreSQL
/// schema, behind `haproxy` on loopback (round-robin, one request per
/// connection so consecutive requests alternate). haproxy checks every
/// backend's `/healthz` every 200 ms, takes one down at its first refused
/// connection, and sends a request whose connection failed to another
/// backend at once (`option redispatch 1`). `restart` starts a killed
/// process again on its port, as a supervisor would. `stop()` ends
/// everything it started, by pid.
final class PostgresFleet: Sendable {
    static let haproxyPath = "/usr/sbin/haproxy"

    let directory: TemporaryDirectory
    private let processes: Mutex<[SpawnedProcess]>
    let ports: [UInt16]
    private let conninfo: String
    let haproxy: SpawnedProcess
    let port: UInt16

    /// Why a fleet cannot run here, or nil.
    static var unavailableReason: String? {
        if access(haproxyPath, X_OK) != 0 { return "\(haproxyPath) is missing (apt-get install haproxy)" }
        if MountFixture.binaryPath == nil { return "the notesfs binary is not built (swift build --build-tests)" }
        return nil
    }

    init(conninfo: String, processes: Int = 2) throws {
        guard let binary = MountFixture.binaryPath else { throw HarnessError("the notesfs binary is not built") }
        directory = try TemporaryDirectory(prefix: "notesfs-fleet")
        var servers: [SpawnedProcess] = []
        var ports: [UInt16] = []
        do {
            for index in 0..<processes {
                let server = try Self.startServer(
                    binary, conninfo: conninfo, index: index, port: 0, log: directory.file("serve\(index).log"))
                servers.append(server)
                ports.append(try Self.waitForPort(server))
            }
        } catch {
            servers.forEach { $0.stop() }
            directory.remove()
            throw error
        }
        let port = try PostgresCluster.freePort()
        let backends = ports.enumerated().map { index, port in
            "    server s\(index) 127.0.0.1:\(port) check inter 200ms fall 3 rise 2"
        }.joined(separator: "\n")
        let configuration = """
            global
                maxconn 500
            defaults
                mode tcp
                timeout connect 500ms
                timeout client 60s
                timeout server 60s
                retries 3
                option redispatch 1
            frontend notesfs
                bind 127.0.0.1:\(port)
                default_backend serve
            backend serve
                balance roundrobin
                option httpchk GET /healthz
            \(backends)
            """
        let configPath = directory.file("haproxy.cfg")
        try (configuration + "\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        let haproxy: SpawnedProcess
        do {
            haproxy = try SpawnedProcess(
                ["/bin/sh", "-c", "exec >>\"$2\" 2>&1; exec \"$0\" -db -f \"$1\"", Self.haproxyPath, configPath,
                    directory.file("haproxy.log")],
                outputPath: directory.file("haproxy.log"))
        } catch {
            servers.forEach { $0.stop() }
            directory.remove()
            throw error
        }
        self.processes = Mutex(servers)
        self.conninfo = conninfo
        self.ports = ports
        self.haproxy = haproxy
        self.port = UInt16(port)
        // Until haproxy answers through to the servers: a generous ceiling for a busy machine.
        let deadline = Date().addingTimeInterval(60)
        while !Self.everyServerUp(behind: self.port, count: processes) {
            guard Date() < deadline, haproxy.isRunning else {
                stop()
                throw HarnessError("haproxy did not start (exit status \(haproxy.wait(seconds: 1))): \(haproxy.output) \(configuration)")
            }
            usleep(20_000)
        }
    }

    /// True when `count` health checks in a row through the balancer were answered 200.
    private static func everyServerUp(behind port: UInt16, count: Int) -> Bool {
        (0..<count).allSatisfy { _ in
            guard let connection = try? RawHTTPConnection(port: port, receiveTimeoutSeconds: 10),
                connection.write(RawHTTPConnection.requestBytes(method: "GET", target: Endpoint.healthz, headers: [:]))
            else { return false }
            return (try? connection.readResponse().status) == 200
        }
    }

    private static func startServer(_ binary: String, conninfo: String, index: Int, port: UInt16, log: String) throws
        -> SpawnedProcess
    {
        // The first process packs its groups with one writer; the others keep the default two.
        let writers = index == 0 ? ["--group-writers", "1"] : []
        // Behind the balancer every client comes from its address (docs/operations.md).
        let proxied = ["--max-connections-per-address", "4000", "--new-connections-per-address", "0"]
        return try SpawnedProcess(
            [binary, "serve", "--postgres", conninfo, "--listen", "127.0.0.1:\(port)", "--pool-size", "4"] + writers
                + proxied,
            outputPath: log)
    }

    /// The serve processes, by index (a restarted one replaces its predecessor).
    var servers: [SpawnedProcess] { processes.withLock { $0 } }

    /// Starts process `index` again on its port (after it died) and waits
    /// until it listens; its log starts afresh in `serve<index>-<n>.log`.
    func restart(_ index: Int) throws {
        guard let binary = MountFixture.binaryPath else { throw HarnessError("the notesfs binary is not built") }
        let old = servers[index]
        guard !old.isRunning else { throw HarnessError("process \(index) is still running") }
        var attempt = 1
        while FileManager.default.fileExists(atPath: directory.file("serve\(index)-\(attempt).log")) { attempt += 1 }
        let log = directory.file("serve\(index)-\(attempt).log")
        let server = try Self.startServer(binary, conninfo: conninfo, index: index, port: ports[index], log: log)
        processes.withLock { $0[index] = server }
        let port = try Self.waitForPort(server)
        guard port == ports[index] else {
            throw HarnessError("process \(index) came back on port \(port), not \(ports[index])")
        }
    }

    private static func waitForPort(_ server: SpawnedProcess) throws -> UInt16 {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let log = server.output
            if let range = log.range(of: "listening on http://127.0.0.1:") {
                let digits = log[range.upperBound...].prefix(while: { $0.isNumber })
                if let port = UInt16(digits) { return port }
            }
            guard server.isRunning else { throw HarnessError("notesfs serve exited: \(log)") }
            usleep(20_000)
        }
        throw HarnessError("notesfs serve did not start: \(server.output)")
    }

    /// Every serve log, for failure messages.
    var logs: String { servers.map(\.output).joined(separator: "\n---\n") }

    func stop() {
        haproxy.stop(seconds: 5)
        servers.forEach { $0.stop(seconds: 15) }
        directory.remove()
    }
}

/// A client of a real server port: one connection per request.
struct RemoteClient: Sendable {
    let port: UInt16
    let token: String

    struct NetworkError: Error, CustomStringConvertible {
        let description: String
    }

    func send(_ method: String, _ path: String, query: [String: String] = [:], body: Data = Data()) async throws -> Reply {
        let bytes = RawHTTPConnection.requestBytes(
            method: method, target: path + queryString(query),
            headers: ["Authorization": "Bearer \(token)", "Connection": "close"], body: body)
        let port = port
        return try await onThread {
            let connection: RawHTTPConnection
            do {
                connection = try RawHTTPConnection(port: port)
            } catch {
                throw NetworkError(description: "connect: \(error)")
            }
            guard connection.write(bytes) else { throw NetworkError(description: "write failed") }
            do {
                return try connection.readReply()
            } catch {
                throw NetworkError(description: "read: \(error)")
            }
        }
    }

    func push(_ changes: [Change]) async throws -> Reply {
        try await send("POST", Endpoint.push, body: try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: changes)))
    }

    /// What a retrying push saw.
    struct Pushed {
        var results: [ChangeResult]
        /// Attempts that failed with a network error or 502/503/504 first.
        var retries: Int
        var unavailable: Int
    }

    /// Pushes until a 200, resending the same bytes (same change ids) after
    /// network errors and 502/503/504, as a client does. `onUnavailable` hears
    /// each 503 as it comes.
    func pushRetrying(
        _ changes: [Change], deadlineSeconds: Double = 120, onUnavailable: @Sendable () -> Void = {}
    ) async throws -> Pushed {
        let body = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: changes))
        let deadline = Date().addingTimeInterval(deadlineSeconds)
        var retries = 0
        var unavailable = 0
        while true {
            do {
                let reply = try await send("POST", Endpoint.push, body: body)
                if reply.status == 200 {
                    let results = try reply.decode(PushResponse.self).results
                    return Pushed(results: results, retries: retries, unavailable: unavailable)
                }
                guard [502, 503, 504].contains(reply.status) else {
                    throw HarnessError("push answered \(reply.status): \(reply.text.prefix(300))")
                }
                if reply.status == 503 {
                    unavailable += 1
                    onUnavailable()
                }
            } catch is NetworkError {}
            retries += 1
            guard Date() < deadline else { throw HarnessError("push did not succeed within \(deadlineSeconds) s") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func changes(since: SyncCursor?, limit: Int = 200, wait: Int? = nil) async throws -> ChangesPage {
        var query: [String: String] = [Endpoint.Query.limit: String(limit)]
        if let since { query[Endpoint.Query.since] = since.rawValue }
        if let wait { query[Endpoint.Query.wait] = String(wait) }
        let reply = try await send("GET", Endpoint.changes, query: query)
        guard reply.status == 200 else { throw HarnessError("changes answered \(reply.status): \(reply.text.prefix(300))") }
        return try reply.decode(ChangesPage.self)
    }

    /// The process's `notesfs_long_polls_held` metric.
    func heldLongPolls() async throws -> Int {
        let text = try await send("GET", Endpoint.metrics).text
        guard let held = ServerMetrics.value("notesfs_long_polls_held", in: text) else {
            throw HarnessError("no notesfs_long_polls_held in the metrics: \(text.prefix(300))")
        }
        return held
    }

    /// Every row from the start, page by page: the latest version of each entity.
    func drain() async throws -> [EntityRef: EntityVersion] {
        var rows: [EntityRef: EntityVersion] = [:]
        var cursor: SyncCursor?
        for _ in 0..<10_000 {
            let page = try await changes(since: cursor)
            for row in page.changes { rows[row.ref] = row }
            cursor = page.nextCursor
            if !page.hasMore { break }
        }
        return rows
    }
}

/// A fresh schema in the shared test cluster and an account in it.
struct PostgresTestAccount {
    let conninfo: String
    let token: String
    let store: PostgresServerStore

    static func make(conninfo: String) async throws -> PostgresTestAccount {
        let store = try PostgresServerStore(conninfo: conninfo, options: PostgresServerStore.Options(listen: false))
        let token = try await AccountManager(store: store).add(name: "fleet-\(UUID().uuidString.prefix(6))").token.text
        return PostgresTestAccount(conninfo: conninfo, token: token, store: store)
    }

    static func inSharedCluster() async throws -> PostgresTestAccount {
        let schema = "f_" + UUID().uuidString.prefix(8).lowercased()
        return try await make(conninfo: try PostgresTestCluster.conninfo(schema: schema))
    }
}
