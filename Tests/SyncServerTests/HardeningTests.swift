import Foundation
import LoopbackHTTP
import NotesModel
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// What a hostile or careless client meets at a real `notesfs serve` process
/// on loopback: a revoked token sees nothing, nothing before the token costs
/// the server memory, ambiguous framing is refused, and a request cannot
/// forge log lines.
@Suite(.serialized) struct HardeningTests {
    /// A started server with one account; `stop()` it in a `defer`.
    struct Running {
        let directory: TemporaryDirectory
        let server: ServerProcess
        let token: String

        /// `arguments`: more `serve` flags.
        init(arguments: [String] = []) throws {
            directory = try TemporaryDirectory(prefix: "notesfs-hardening")
            server = ServerProcess(dataDirectory: directory.file("server"))
            server.extraArguments = arguments
            let tokenPath = directory.file("alice.token")
            try server.addAccount("alice", tokenPath: tokenPath)
            token = try String(contentsOfFile: tokenPath, encoding: .utf8)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { AccessToken(text: $0) != nil } ?? ""
            try server.start()
        }

        var log: String { (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? "" }

        func stop() {
            server.stop()
            directory.remove()
        }
    }

    static var binaryMissing: Bool {
        if MountFixture.binaryPath == nil {
            skipLoudly("the notesfs binary was not built (swift build --build-tests)")
            return true
        }
        return false
    }

    /// Resident memory of a process, in bytes.
    static func residentBytes(_ pid: pid_t) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1_024
    }

    @Test func revokingAnAccountEndsItsParkedLongPollAtOnceWith401() async throws {
        guard !Self.binaryMissing, let binary = MountFixture.binaryPath else { return }
        let running = try Running()
        defer { running.stop() }
        let port = running.server.port
        let token = running.token
        let poll = Self.longPoll(port: port, token: token)
        // Parked before the revocation.
        #expect(try await waitUntil { try await Self.parkedPolls(port: port) == 1 })
        let revoke = try MountFixture.run([binary, "account", "revoke", "alice", "--data", running.server.dataDirectory])
        #expect(revoke.status == 0, "\(revoke.standardError)")
        // The account is reopened with a new token that pushes a note: the old
        // poll must not see it.
        try running.server.addAccount("alice", tokenPath: running.directory.file("new.token"))
        let newToken = try String(contentsOfFile: running.directory.file("new.token"), encoding: .utf8)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { AccessToken(text: $0) != nil } ?? ""
        let push = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note(title: "after-revoke", body: "new text\n")]))
        let pushed = try await onThread {
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
            connection.write(
                RawHTTPConnection.requestBytes(
                    method: "POST", target: Endpoint.push, headers: ["Authorization": "Bearer \(newToken)"], body: push))
            return try connection.readReply().status
        }
        #expect(pushed == 200)
        let answer = try await poll.value
        // Its 30 s wait would have ended it with 200: the 401 came from the revocation.
        #expect(answer.status == 401)
        #expect(!answer.body.contains("after-revoke"))
    }

    /// Long polls the server holds now.
    static func parkedPolls(port: UInt16) async throws -> Int {
        try await onThread { try ServerMetrics.heldLongPolls(port: port) }
    }

    /// A long poll of `token` from the start of the feed, on its own connection.
    static func longPoll(port: UInt16, token: String) -> Task<(status: Int, body: String), any Error> {
        Task {
            try await onThread { () -> (status: Int, body: String) in
                let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 40)
                connection.write(
                    RawHTTPConnection.requestBytes(
                        method: "GET", target: Endpoint.changes + "?wait=30",
                        headers: ["Authorization": "Bearer \(token)"], body: Data()))
                let reply = try connection.readResponse()
                return (reply.status, String(decoding: reply.body, as: UTF8.self))
            }
        }
    }

    /// `account revoke NAME --token ID` during parked polls: the revoked
    /// token's poll ends with 401, the other token's poll parks on and still
    /// gets the account's next change.
    @Test func revokingOneTokenEndsOnlyItsParkedLongPollWith401() async throws {
        guard !Self.binaryMissing, let binary = MountFixture.binaryPath else { return }
        let running = try Running()
        defer { running.stop() }
        let port = running.server.port
        let secondPath = running.directory.file("second.token")
        try running.server.addAccount("alice", tokenPath: secondPath)
        let second = try String(contentsOfFile: secondPath, encoding: .utf8)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { AccessToken(text: $0) != nil } ?? ""
        let firstID = try #require(AccessToken(text: running.token)).id

        let revokedPoll = Self.longPoll(port: port, token: running.token)
        #expect(try await waitUntil { try await Self.parkedPolls(port: port) == 1 })
        let livePoll = Self.longPoll(port: port, token: second)
        #expect(try await waitUntil { try await Self.parkedPolls(port: port) == 2 })

        let revoke = try MountFixture.run(
            [binary, "account", "revoke", "alice", "--token", firstID, "--data", running.server.dataDirectory])
        #expect(revoke.status == 0, "\(revoke.standardError)")
        let revoked = try await revokedPoll.value
        #expect(revoked.status == 401)
        #expect(!revoked.body.contains("after-revoke"))

        let push = try WireCoding.encoder().encode(
            PushRequest(device: DeviceID(), changes: [Make.note(title: "after-revoke", body: "new text\n")]))
        let pushed = try await onThread {
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
            connection.write(
                RawHTTPConnection.requestBytes(
                    method: "POST", target: Endpoint.push, headers: ["Authorization": "Bearer \(second)"], body: push))
            return try connection.readResponse().status
        }
        #expect(pushed == 200)
        let live = try await livePoll.value
        #expect(live.status == 200)
        #expect(live.body.contains("after-revoke"), "the other token's poll was still parked: \(live.body.prefix(300))")
    }

    @Test func bodiesSentWithoutALiveTokenAreNeverRead() async throws {
        guard !Self.binaryMissing else { return }
        let running = try Running()
        defer { running.stop() }
        guard let pid = running.server.pid else { throw HarnessError("no server pid") }
        let port = running.server.port
        let before = Self.residentBytes(pid)
        let fake = AccessToken.generate().text
        // 30 uploads of 16 MB each, half with a malformed token and half with
        // a well-formed unknown one; each stops when the server closes or
        // after 20 seconds.
        let uploads = (0..<30).map { index in
            Task {
                try await onThread { () -> (status: Int, sent: Int) in
                    let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 20)
                    var timeout = timeval(tv_sec: 5, tv_usec: 0)
                    setsockopt(connection.socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    let size = 16 << 20
                    let authorization = index % 2 == 0 ? "Bearer invalid" : "Bearer \(fake)"
                    let head = "POST \(Endpoint.push) HTTP/1.1\r\nHost: x\r\nAuthorization: \(authorization)\r\n"
                        + (index % 3 == 0 ? "Content-Encoding: gzip\r\n" : "") + "Content-Length: \(size)\r\n\r\n"
                    guard connection.write(Data(head.utf8)) else { return (0, 0) }
                    let chunk = Data(repeating: 0x7B, count: 256 * 1_024)
                    var sent = 0
                    let deadline = ContinuousClock.now + .seconds(20)
                    while sent < size, ContinuousClock.now < deadline, connection.write(chunk) { sent += chunk.count }
                    let status = (try? connection.readReply().status) ?? 0
                    return (status, sent)
                }
            }
        }
        var peak = before
        var results: [(status: Int, sent: Int)] = []
        let sampler = Task {
            var highest = 0
            while !Task.isCancelled {
                highest = max(highest, Self.residentBytes(pid))
                try? await Task.sleep(for: .milliseconds(50))
            }
            return highest
        }
        for upload in uploads { results.append(try await upload.value) }
        sampler.cancel()
        peak = max(peak, await sampler.value)
        // Each was answered 401 (or cut off); none got its 16 MB accepted.
        #expect(results.allSatisfy { $0.status == 401 || $0.status == 0 }, "\(results.map(\.status))")
        #expect(results.filter { $0.status == 401 }.count >= 15)
        #expect(results.allSatisfy { $0.sent < 16 << 20 }, "\(results.map(\.sent))")
        // Buffering them would take 480 MB.
        #expect(peak - before < 64 << 20, "server RSS grew from \(before >> 20) MB to \(peak >> 20) MB")
    }

    /// Requests whose body length is ambiguous or invalid (RFC 9112 §6.3).
    static let ambiguousFraming: [(name: String, head: String)] = [
        ("two different Content-Length", "Content-Length: %d\r\nContent-Length: 5\r\n"),
        ("the same Content-Length twice", "Content-Length: %d\r\nContent-Length: %d\r\n"),
        ("Content-Length and chunked", "Content-Length: %d\r\nTransfer-Encoding: chunked\r\n"),
        ("chunked not last", "Transfer-Encoding: chunked, gzip\r\n"),
        ("an unknown transfer coding", "Transfer-Encoding: gzip\r\n"),
        ("space before the colon", "Content-Length : %d\r\n"),
        ("a Content-Length list", "Content-Length: %d, %d\r\n"),
    ]

    @Test func ambiguousFramingIsRefusedWith400AndTheConnectionClosed() async throws {
        guard !Self.binaryMissing else { return }
        let running = try Running()
        defer { running.stop() }
        let port = running.server.port
        let token = running.token
        let body = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note(title: "smuggled")]))
        for (name, template) in Self.ambiguousFraming {
            let head = template.replacingOccurrences(of: "%d", with: "\(body.count)")
            let (status, closed) = try await onThread { () -> (Int, Bool) in
                let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
                let request = "POST \(Endpoint.push) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\(head)\r\n"
                connection.write(Data(request.utf8) + body)
                let status = (try? connection.readReply().status) ?? 0
                return (status, connection.isClosedByPeer())
            }
            #expect(status == 400, "\(name): \(status)")
            #expect(closed, "\(name): the connection stayed open")
        }
        // Nothing was stored.
        let feed = try await onThread {
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
            connection.write(
                RawHTTPConnection.requestBytes(
                    method: "GET", target: Endpoint.changes, headers: ["Authorization": "Bearer \(token)"], body: Data()))
            return try connection.readReply()
        }
        #expect(try feed.decode(ChangesPage.self).changes.isEmpty)
    }

    @Test func requestFieldsCannotForgeLogLinesOrCarryControlBytes() async throws {
        guard !Self.binaryMissing else { return }
        let running = try Running()
        defer { running.stop() }
        let port = running.server.port
        let targets = [
            "/x%0a2026-01-01%20forged%0d%0aerror:%20forged",
            "/v1/changes%1b[31mred%07",
            "/v1/%e2%80%a8line%c2%85next",
        ]
        for target in targets {
            _ = try await onThread {
                let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
                connection.write(Data("GET \(target) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x%0aforged\r\n\r\n".utf8))
                return try connection.readReply().status
            }
        }
        // Each request is logged once it has been answered.
        #expect(try await waitUntil { running.log.components(separatedBy: "GET /").count > targets.count })
        let log = running.log
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(!lines.contains { $0.hasPrefix("error: forged") || $0.hasPrefix("2026-01-01") })
        #expect(!log.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(!log.unicodeScalars.contains { (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 })
        #expect(log.contains(#"/x\x0a2026-01-01\x20forged\x0d\x0aerror:\x20forged 404"#), "\(log)")
    }

    @Test func aThousandQueryParametersGetA400AndALogLine() async throws {
        guard !Self.binaryMissing else { return }
        let running = try Running()
        defer { running.stop() }
        let port = running.server.port
        let token = running.token
        let query = (0..<1_000).map { "p\($0)=1" }.joined(separator: "&")
        let reply = try await onThread {
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10)
            connection.write(
                Data("GET \(Endpoint.changes)?\(query) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8))
            return try connection.readReply()
        }
        #expect(reply.status == 400)
        #expect(String(decoding: reply.body, as: UTF8.self).contains("1000 query parameters"))
        #expect(try await waitUntil { running.log.contains("GET /v1/changes 400") }, "\(running.log)")
    }
}
