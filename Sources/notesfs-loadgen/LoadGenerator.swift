import Foundation
import LoopbackHTTP
import NotesModel
import Synchronization
import SyncProtocol
import SyncServer
import SyncServerPostgres
import SyncServerSQLite

/// The modes of `notesfs-loadgen`.
enum LoadGenerator {
    static func main(_ arguments: [String]) -> Int32 {
        guard let mode = arguments.first else {
            FileHandle.standardError.write(Data("usage: notesfs-loadgen setup|push|wake|poll [options]\n".utf8))
            return 2
        }
        var options: [String: String] = [:]
        var index = 1
        while index + 1 < arguments.count {
            options[arguments[index]] = arguments[index + 1]
            index += 2
        }
        do {
            switch mode {
            case "setup": try setup(options)
            case "push": try push(options)
            case "wake": try wake(options)
            case "poll": try poll(options)
            default: throw LoadError("unknown mode \(mode)")
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("notesfs-loadgen: \(error)\n".utf8))
            return 1
        }
    }

    static func option(_ options: [String: String], _ name: String) throws -> String {
        guard let value = options[name] else { throw LoadError("\(name) is required") }
        return value
    }

    static func number(_ options: [String: String], _ name: String) throws -> Int {
        guard let value = Int(try option(options, name)), value > 0 else { throw LoadError("\(name) must be > 0") }
        return value
    }

    /// Makes accounts in a server data directory (or the PostgreSQL store of
    /// `--postgres CONNINFO`) and writes their tokens.
    static func setup(_ options: [String: String]) throws {
        let count = try number(options, "--accounts")
        let out = try option(options, "--out")
        let store: any ServerStore
        if let conninfo = options["--postgres"] {
            store = try PostgresServerStore(conninfo: conninfo, options: PostgresServerStore.Options(listen: false))
        } else {
            store = try SQLiteServerStore(path: SQLiteServerStore.databasePath(inDirectory: try option(options, "--data")))
        }
        let tokens = try wait {
            var tokens: [String] = []
            let manager = AccountManager(store: store)
            for index in 0..<count { tokens.append(try await manager.add(name: "bench-\(index)").token.text) }
            await store.close()
            return tokens
        }
        try tokens.joined(separator: "\n").write(toFile: out, atomically: true, encoding: .utf8)
    }

    /// Clients each pushing one 2 KB note edit at a time, pulling every tenth
    /// push; with `--parked N`, while N long polls wait on another account.
    static func push(_ options: [String: String]) throws {
        let port = UInt16(try number(options, "--port"))
        let allTokens = try loadTokens(try option(options, "--tokens"))
        let clients = try number(options, "--clients")
        let seconds = Double(try number(options, "--seconds"))
        let parkedCount = try options["--parked"].map { _ in try number(options, "--parked") } ?? 0
        // The parked polls wait on the last account, which no client pushes to.
        let tokens = parkedCount > 0 ? Array(allTokens.dropLast()) : allTokens
        guard let watched = allTokens.last, !tokens.isEmpty else { throw LoadError("--parked needs two accounts") }
        let parked = try parkedCount > 0 ? parkPolls(parkedCount, port: port, token: watched) : []
        let results = Mutex<(latencies: [Double], applied: Int, failures: Int, pulls: Int)>(([], 0, 0, 0))
        let start = Date()
        let deadline = start.addingTimeInterval(seconds)
        runThreads(clients) { client in
            let token = tokens[client % tokens.count]
            var latencies: [Double] = []
            var applied = 0
            var failures = 0
            var pulls = 0
            do {
                let connection = try RawHTTPConnection(port: port)
                let device = DeviceID()
                let note = NoteID()
                var version: Int64?
                var cursor: String?
                var edit = 0
                while Date() < deadline {
                    edit += 1
                    let body = String(repeating: "line \(edit) of a note being edited\n", count: 60).prefix(2_048)
                    let change = Change.putNote(
                        note, NotePayload(title: "bench-\(client).md", body: String(body), folderId: nil),
                        baseVersion: version)
                    let data = try WireCoding.encoder().encode(PushRequest(device: device, changes: [change]))
                    let began = DispatchTime.now().uptimeNanoseconds
                    try connection.send(method: "POST", target: Endpoint.push, token: token, body: data)
                    let reply = try connection.receive()
                    latencies.append(Double(DispatchTime.now().uptimeNanoseconds - began) / 1e6)
                    guard reply.status == 200,
                        let result = try? WireCoding.decoder().decode(PushResponse.self, from: reply.body).results.first
                    else {
                        failures += 1
                        continue
                    }
                    switch result.outcome {
                    case .applied(let new):
                        version = new
                        applied += 1
                    case .conflict(let current):
                        version = current?.version
                    case .refused:
                        failures += 1
                    }
                    if edit % 10 == 0 {
                        let query = cursor.map { "?since=\($0)&limit=50" } ?? "?limit=50"
                        try connection.send(method: "GET", target: Endpoint.changes + query, token: token)
                        let page = try connection.receive()
                        if page.status == 200, let decoded = try? WireCoding.decoder().decode(ChangesPage.self, from: page.body) {
                            cursor = decoded.nextCursor.rawValue
                            pulls += 1
                        }
                    }
                }
            } catch {
                failures += 1
            }
            results.withLock { total in
                total.latencies += latencies
                total.applied += applied
                total.failures += failures
                total.pulls += pulls
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        let total = results.withLock { $0 }
        let sorted = total.latencies.sorted()
        let stillParked = try ServerMetrics.heldLongPolls(port: port)
        withExtendedLifetime(parked) {}
        print(
            String(
                format: "push clients=%d applied=%d seconds=%.1f rate=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.1f pulls=%d failures=%d parked=%d",
                clients, total.applied, elapsed, Double(total.applied) / elapsed, percentile(sorted, 0.50),
                percentile(sorted, 0.99), sorted.last ?? 0, total.pulls, total.failures, stillParked))
    }

    /// Opens `count` connections that each park a 30 s long poll on `token`'s
    /// account, and waits until the server holds them all.
    static func parkPolls(_ count: Int, port: UInt16, token: String) throws -> [RawHTTPConnection] {
        let first = try RawHTTPConnection(port: port)
        try first.send(method: "GET", target: Endpoint.changes, token: token)
        let cursor = try WireCoding.decoder().decode(ChangesPage.self, from: try first.receive().body).nextCursor.rawValue
        var polls: [RawHTTPConnection] = []
        for _ in 0..<count {
            let poll = try RawHTTPConnection(port: port)
            try poll.send(method: "GET", target: Endpoint.changes + "?since=\(cursor)&wait=30", token: token)
            polls.append(poll)
        }
        let deadline = Date().addingTimeInterval(30)
        while try ServerMetrics.heldLongPolls(port: port) < count {
            guard Date() < deadline else { throw LoadError("the server holds fewer than \(count) long polls") }
            usleep(10_000)
        }
        return polls
    }

    /// Each client parks a long poll on its account, pushes one change on a
    /// second connection and reads the woken poll: wake-ups per second and
    /// latency from push to wake.
    static func wake(_ options: [String: String]) throws {
        let port = UInt16(try number(options, "--port"))
        let tokens = try loadTokens(try option(options, "--tokens"))
        let clients = try number(options, "--clients")
        let seconds = Double(try number(options, "--seconds"))
        guard tokens.count >= clients else { throw LoadError("wake needs one account per client") }
        let results = Mutex<(latencies: [Double], wakes: Int, failures: Int)>(([], 0, 0))
        let start = Date()
        let deadline = start.addingTimeInterval(seconds)
        runThreads(clients) { client in
            let token = tokens[client]
            var latencies: [Double] = []
            var failures = 0
            do {
                let poller = try RawHTTPConnection(port: port)
                let pusher = try RawHTTPConnection(port: port)
                let device = DeviceID()
                try poller.send(method: "GET", target: Endpoint.changes, token: token)
                let first = try poller.receive()
                var cursor = try WireCoding.decoder().decode(ChangesPage.self, from: first.body).nextCursor.rawValue
                while Date() < deadline {
                    try poller.send(method: "GET", target: Endpoint.changes + "?since=\(cursor)&wait=30", token: token)
                    usleep(1_000)  // let the poll park
                    let change = Change.delete(.note(NoteID()), baseVersion: nil)
                    let data = try WireCoding.encoder().encode(PushRequest(device: device, changes: [change]))
                    let began = DispatchTime.now().uptimeNanoseconds
                    try pusher.send(method: "POST", target: Endpoint.push, token: token, body: data)
                    _ = try pusher.receive()
                    let woken = try poller.receive()
                    latencies.append(Double(DispatchTime.now().uptimeNanoseconds - began) / 1e6)
                    guard woken.status == 200,
                        let page = try? WireCoding.decoder().decode(ChangesPage.self, from: woken.body)
                    else {
                        failures += 1
                        continue
                    }
                    cursor = page.nextCursor.rawValue
                }
            } catch {
                failures += 1
            }
            results.withLock { total in
                total.latencies += latencies
                total.wakes += latencies.count
                total.failures += failures
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        let total = results.withLock { $0 }
        let sorted = total.latencies.sorted()
        print(
            String(
                format: "wake clients=%d wakes=%d seconds=%.1f rate=%.0f p50_ms=%.2f p99_ms=%.2f failures=%d",
                clients, total.wakes, elapsed, Double(total.wakes) / elapsed, percentile(sorted, 0.50),
                percentile(sorted, 0.99), total.failures))
    }

    /// Clients each re-polling its account's feed at the head, every poll
    /// on one kept-alive connection: with `--wait 0` empty polls as fast as
    /// the server answers, with `--wait W` idle long-poll cycles (each parks
    /// W seconds, ends with nothing new, and is sent again at once). Nobody
    /// pushes, so every answer must be an empty page.
    static func poll(_ options: [String: String]) throws {
        let port = UInt16(try number(options, "--port"))
        let tokens = try loadTokens(try option(options, "--tokens"))
        let clients = try number(options, "--clients")
        let seconds = Double(try number(options, "--seconds"))
        let wait = try options["--wait"].map { text in
            guard let wait = Int(text), wait >= 0 else { throw LoadError("--wait must be ≥ 0") }
            return wait
        } ?? 0
        let results = Mutex<(polls: Int, failures: Int)>((0, 0))
        let start = Date()
        let deadline = start.addingTimeInterval(seconds)
        runThreads(clients) { client in
            let token = tokens[client % tokens.count]
            var polls = 0
            var failures = 0
            do {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(method: "GET", target: Endpoint.changes, token: token)
                let first = try connection.receive()
                let cursor = try WireCoding.decoder().decode(ChangesPage.self, from: first.body).nextCursor.rawValue
                let target = Endpoint.changes + "?since=\(cursor)" + (wait > 0 ? "&wait=\(wait)" : "")
                while Date() < deadline {
                    try connection.send(method: "GET", target: target, token: token)
                    let reply = try connection.receive()
                    guard reply.status == 200,
                        let page = try? WireCoding.decoder().decode(ChangesPage.self, from: reply.body),
                        page.changes.isEmpty
                    else {
                        failures += 1
                        continue
                    }
                    polls += 1
                }
            } catch {
                failures += 1
            }
            results.withLock { total in
                total.polls += polls
                total.failures += failures
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        let total = results.withLock { $0 }
        print(
            String(
                format: "poll clients=%d wait=%d polls=%d seconds=%.1f rate=%.0f failures=%d", clients, wait,
                total.polls, elapsed, Double(total.polls) / elapsed, total.failures))
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    static func loadTokens(_ path: String) throws -> [String] {
        let tokens = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        guard !tokens.isEmpty else { throw LoadError("no tokens in \(path)") }
        return tokens
    }

    /// Runs `body(i)` for i in 0..<count on threads of their own and waits.
    static func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                body(index)
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
    }

    /// Waits for async work from this synchronous program.
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else { throw LoadError("no result") }
        return try outcome.get()
    }
}
