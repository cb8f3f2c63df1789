import Foundation
import HTTPServer
import LoopbackHTTP
import NotesModel
import SyncProtocol
import SyncServer
import Synchronization
import Testing
import TestSupport

/// Collects log lines.
final class CollectingLogger: ServerLogger {
    private let lines = Mutex<[String]>([])
    func log(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// What only a real HTTP server can show: transport limits, slow clients,
/// parked connections, compression, logs, shutdown.
@Suite struct HTTPServerTests {
    /// A harness over HTTP with a custom daemon configuration and logger.
    static func harness(
        limits: ProtocolLimits = .standard, logger: any ServerLogger = SilentLogger(),
        configure: @escaping @Sendable (inout HTTPServer.Configuration) -> Void = { _ in }
    ) throws -> (Harness, HTTPTransport) {
        let kind = TransportKind(name: "http-custom") { server in
            try HTTPTransport(server: server, logger: logger, configure: configure)
        }
        let harness = try Harness(.sqlite, kind, limits: limits)
        guard let transport = harness.transport as? HTTPTransport else { throw HarnessError("not HTTP") }
        return (harness, transport)
    }

    @Test func largeResponsesAreGzippedOnlyWhenTheClientAcceptsIt() async throws {
        let (h, _) = try Self.harness()
        let token = try await h.account()
        _ = try await h.push(Make.note(body: String(repeating: "line of text\n", count: 500)), token: token)
        let plain = try await h.send("GET", Endpoint.changes, token: token)
        #expect(plain.headers["content-encoding"] == nil)
        let zipped = try await h.send("GET", Endpoint.changes, token: token, headers: ["Accept-Encoding": "br, gzip"])
        #expect(zipped.headers["content-encoding"] == "gzip")
        #expect(zipped.body == plain.body)
        #expect(zipped.headers["vary"] == "Accept-Encoding")
        let small = try await h.send("GET", Endpoint.healthz, token: nil, headers: ["Accept-Encoding": "gzip"])
        #expect(small.headers["content-encoding"] == nil)
        // A one-change push reply (about 200 bytes) shrinks too; a POST answer is never cached: no Vary.
        let head = try await h.changes(token: token).nextCursor
        let push = try WireCoding.encoder().encode(PushRequest(device: h.device, changes: [Make.note()], cursor: head))
        let reply = try await h.send("POST", Endpoint.push, token: token, body: push, headers: ["Accept-Encoding": "gzip"])
        #expect(reply.status == 200)
        #expect(reply.headers["content-encoding"] == "gzip")
        #expect(reply.headers["vary"] == nil)
        #expect(try reply.decode(PushResponse.self).nextCursor != nil)
        await h.close()
    }

    @Test func gzipRequestBodiesAreInflatedWithinTheLimitAndBadOnesChangeNothing() async throws {
        var limits = ProtocolLimits()
        limits.requestBodyBytesMax = 200_000
        let (h, _) = try Self.harness(limits: limits)
        let token = try await h.account()
        let text = String(repeating: "a line of a long note\n", count: 2_000)
        let push = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note(body: text)]))
        let compressed = try #require(Gzip.compress(push))
        #expect(compressed.count < push.count / 10)
        let gzip = ["Content-Encoding": "gzip"]
        let applied = try await h.send("POST", Endpoint.push, token: token, body: compressed, headers: gzip)
        #expect(applied.status == 200, "\(applied.text.prefix(200))")
        #expect(try applied.decode(PushResponse.self).results.first?.status == "applied")
        // Not gzip at all; an encoding the server does not speak; a small body
        // that inflates past the limit.
        let garbage = try await h.send("POST", Endpoint.push, token: token, body: Data("not gzip".utf8), headers: gzip)
        #expect(garbage.status == 400)
        let brotli = try await h.send("POST", Endpoint.push, token: token, body: push, headers: ["Content-Encoding": "br"])
        #expect(brotli.status == 400)
        let bomb = try #require(Gzip.compress(Data(repeating: 0x20, count: 1_000_000)))
        #expect(bomb.count < limits.requestBodyBytesMax)
        let inflated = try await h.send("POST", Endpoint.push, token: token, body: bomb, headers: gzip)
        #expect(inflated.status == 413)
        #expect(try await h.drain(token: token).rows.count == 1)
        await h.close()
    }

    @Test func anOversizedBodyGets413UnreadAndTheServerKeepsServing() async throws {
        var limits = ProtocolLimits()
        limits.requestBodyBytesMax = 50_000
        let (h, transport) = try Self.harness(limits: limits)
        let token = try await h.account()
        let port = transport.port
        // Declared too large: answered before the body is sent.
        let declared = try await onThread {
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
            let head = "POST \(Endpoint.push) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: 100000000\r\n\r\n"
            connection.write(Data(head.utf8))
            return try connection.readReply()
        }
        #expect(declared.status == 413)
        #expect(declared.errorCode == "payload_too_large")
        // Chunked past the limit: the connection is closed.
        let closed = try await onThread {
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
            let head = "POST \(Endpoint.push) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nTransfer-Encoding: chunked\r\n\r\n"
            connection.write(Data(head.utf8))
            let chunk = Data("4000\r\n".utf8) + Data(repeating: UInt8(ascii: "a"), count: 0x4000) + Data("\r\n".utf8)
            for _ in 0..<8 { if !connection.write(chunk) { break } }
            return (try? connection.readReply()).map(\.status) ?? 0
        }
        #expect(closed == 0 || closed == 413)
        // 10,000 changes in one push (within the byte limit of a default server).
        let (big, _) = try Self.harness()
        let bigToken = try await big.account()
        let many = try await big.pushRaw((0..<10_000).map { _ in Make.delete(.note(NoteID()), baseVersion: nil) }, token: bigToken)
        #expect(many.status == 413)
        #expect(many.errorCode == "too_many_changes")
        #expect(try await big.drain(token: bigToken).rows.isEmpty)
        await big.close()
        // Others are still served, and nothing was stored.
        #expect(try await h.push(Make.note(), token: token).appliedVersion == 1)
        #expect(try await h.drain(token: token).rows.count == 1)
        await h.close()
    }

    @Test func slowClientsAreCutOffAndOthersAreStillServed() async throws {
        let (h, transport) = try Self.harness { $0.connectionTimeoutSeconds = 1 }
        let token = try await h.account()
        let port = transport.port
        // Twenty clients send half a request line and stall.
        // Each read below waits for the close with a generous ceiling (the
        // receive timeout), far past the server's 1 s.
        let slow = try (0..<20).map { _ in try RawHTTPConnection(port: port, receiveTimeoutSeconds: 60) }
        let boxes = slow.map { HTTPTransport.ConnectionBox($0) }
        for box in boxes { box.connection.write(Data("GET /v1/chan".utf8)) }
        // A normal client is answered meanwhile (how fast is a benchmark figure).
        #expect(try await h.push(Make.note(), token: token).appliedVersion == 1)
        // After the idle timeout the stalled connections are closed.
        let closedCount = try await onThread {
            boxes.filter { $0.connection.isClosedByPeer() }.count
        }
        #expect(closedCount == 20)
        // A client trickling one byte at a time is also cut off eventually.
        let trickled = try await onThread { () -> Bool in
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 60)
            for byte in Data("GET /healthz HTTP/1.1\r\nX-Slow: ".utf8) {
                guard connection.write(Data([byte])) else { return true }
                usleep(20_000)
            }
            // Then it stalls: the close comes after the idle timeout.
            return connection.isClosedByPeer()
        }
        #expect(trickled)
        await h.close()
    }

    /// How much parked polls slow pushes is a benchmark figure
    /// (`scripts/bench-server`, the "long polls parked" row); this checks what
    /// holds on any machine.
    @Test func fiveHundredParkedLongPollsLeavePushesServedAndOneChangeWakesThemAll() async throws {
        // All from one address: no per-address limits here. The polls wait up
        // to ten minutes: only the change can answer them within this test.
        var limits = ProtocolLimits.standard
        limits.waitSecondsMax = 600
        let (h, transport) = try Self.harness(limits: limits) {
            $0.connectionsPerAddressMax = 0
            $0.newConnectionsPerAddressPerSecond = 0
        }
        let watched = try await h.account("watched")
        let writer = try await h.account("writer")
        let port = transport.port
        let head = try await h.changes(token: watched)
        // Park 500 long polls on one account.
        let request = RawHTTPConnection.requestBytes(
            method: "GET", target: Endpoint.changes + queryString(["since": head.nextCursor.rawValue, "wait": "600"]),
            headers: ["Authorization": "Bearer \(watched)"], body: Data())
        let polls = try await onThread {
            try (0..<500).map { _ in
                let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 600)
                connection.write(request)
                return HTTPTransport.ConnectionBox(connection)
            }
        }
        #expect(try await waitUntil { h.server.notifier.waitingCount == 500 })
        for _ in 0..<30 {
            #expect(try await h.push(Make.note(), token: writer).appliedVersion != nil)
        }
        #expect(h.server.notifier.waitingCount == 500, "the writer's pushes woke none of them")
        // One change wakes them all: each answers with it (a poll that timed out would be empty).
        _ = try await h.push(Make.note(body: "wake\n"), token: watched)
        let statuses = try await onThread { try polls.map { try $0.connection.readReply() } }
        #expect(statuses.allSatisfy { $0.status == 200 })
        #expect(try statuses.allSatisfy { try $0.decode(ChangesPage.self).changes.count == 1 })
        #expect(h.server.notifier.waitingCount == 0)
        await h.close()
    }

    @Test func stoppingAnswersParkedLongPollsAndFinishesCleanly() async throws {
        // The polls wait up to ten minutes: only the stop can answer them within this test.
        var limits = ProtocolLimits.standard
        limits.waitSecondsMax = 600
        let (h, transport) = try Self.harness(limits: limits)
        let token = try await h.account()
        let port = transport.port
        let head = try await h.changes(token: token)
        let request = RawHTTPConnection.requestBytes(
            method: "GET", target: Endpoint.changes + queryString(["since": head.nextCursor.rawValue, "wait": "600"]),
            headers: ["Authorization": "Bearer \(token)"], body: Data())
        let polls = try await onThread {
            try (0..<5).map { _ in
                let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 300)
                connection.write(request)
                return HTTPTransport.ConnectionBox(connection)
            }
        }
        #expect(try await waitUntil { h.server.notifier.waitingCount == 5 })
        async let replies = onThread { try polls.map { try $0.connection.readReply() } }
        await transport.stop()
        let answered = try await replies
        #expect(answered.map(\.status) == [200, 200, 200, 200, 200])
        #expect(try answered.allSatisfy { try $0.decode(ChangesPage.self).changes.isEmpty })
        #expect(transport.http.openRequests == 0)
        await h.close()
    }

    /// libmicrohttpd's quiesce once aborted the whole process when a worker
    /// was busy at the moment of stopping; stopping under traffic must not.
    private final class Traffic: Sendable {
        let running = Atomic<Bool>(true)
        let served = Atomic<Int>(0)
    }

    @Test func stoppingWhileClientsKeepConnectingNeverAborts() async throws {
        for _ in 0..<40 {
            let (h, transport) = try Self.harness { $0.threadPoolSize = 2 }
            let port = transport.port
            let traffic = Traffic()
            let request = RawHTTPConnection.requestBytes(
                method: "GET", target: Endpoint.healthz, headers: [:], body: Data())
            let clients = (0..<4).map { _ in
                Task {
                    try? await onThread {
                        while traffic.running.load(ordering: .relaxed) {
                            guard let connection = try? RawHTTPConnection(port: port, receiveTimeoutSeconds: 2) else {
                                continue
                            }
                            if connection.write(request), (try? connection.readReply()) != nil {
                                traffic.served.add(1, ordering: .relaxed)
                            }
                        }
                    }
                }
            }
            #expect(try await waitUntil { traffic.served.load(ordering: .relaxed) >= 20 })
            await transport.stop()
            traffic.running.store(false, ordering: .relaxed)
            for client in clients { await client.value }
            #expect(transport.http.openRequests == 0)
            await h.close()
        }
    }

    @Test func everyRequestIsLoggedOnceWithoutNoteText() async throws {
        let logger = CollectingLogger()
        let (h, _) = try Self.harness(logger: logger)
        let token = try await h.account()
        _ = try await h.push(Make.note(title: "diary-title-x", body: "secret body text\n"), token: token)
        _ = try await h.changes(token: token)
        _ = try await h.send("GET", Endpoint.changes, token: "wrong")
        await h.close(keepData: false)
        let lines = logger.all
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.allSatisfy { !$0.contains("secret") && !$0.contains("diary-title") })
        #expect(lines.first?.contains("POST /v1/push 200") == true)
        #expect(lines.first?.contains("applied=1") == true)
        #expect(lines.last?.contains(" 401 ") == true)
    }

    @Test func httpsWorksWithACertificateAndKey() async throws {
        let tools = ["/usr/bin/openssl", "/usr/bin/curl"]
        guard tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) else {
            skipLoudly("openssl or curl is missing, so HTTPS was not tested")
            return
        }
        let directory = try TemporaryDirectoryForTLS()
        defer { directory.remove() }
        let generated = try await onThread {
            try MountFixture.run([
                "/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-keyout", directory.key, "-out", directory.cert,
            ])
        }
        #expect(generated.status == 0, "\(generated.standardError)")
        let certificate = try String(contentsOfFile: directory.cert, encoding: .utf8)
        let key = try String(contentsOfFile: directory.key, encoding: .utf8)
        let (h, transport) = try Self.harness { $0.tls = (certificate, key) }
        let output = try await onThread {
            try MountFixture.run(["/usr/bin/curl", "-sk", "https://127.0.0.1:\(transport.port)/healthz"]).standardOutput
        }
        #expect(output == #"{"status":"ok"}"#)
        await h.close()
    }
}

/// Paths for a throwaway certificate.
struct TemporaryDirectoryForTLS {
    let url: URL
    init() throws {
        url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("notesfs-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    var key: String { url.appendingPathComponent("key.pem").path }
    var cert: String { url.appendingPathComponent("cert.pem").path }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

extension Make {
    static func delete(_ ref: EntityRef, baseVersion: Int64?) -> Change { .delete(ref, baseVersion: baseVersion) }
}

/// Reports a test that could not run: a printed warning locally, a failure
/// when `NOTESFS_REQUIRE_ALL_TESTS=1` (CI), so a green CI means it ran.
func skipLoudly(_ why: String) {
    if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" {
        Issue.record("SKIPPED, but NOTESFS_REQUIRE_ALL_TESTS=1: \(why)")
    } else {
        FileHandle.standardError.write(Data("SKIPPED: \(why)\n".utf8))
    }
}
