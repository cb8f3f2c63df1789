import Foundation
import LoopbackHTTP
import NotesModel
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// Who gets a connection at all, at a real `notesfs serve` process on
/// loopback: one address opening connections faster than its rate has the
/// rest closed at accept while other addresses are served, and a flood of
/// refused requests costs the log a few lines, not one each. Other loopback
/// addresses (127.0.0.x) stand for other clients.
@Suite(.serialized) struct AdmissionTests {
    /// One request on a new connection from `source`: its status, or nil
    /// when the connection was closed without an answer.
    static func status(port: UInt16, source: String, request: Data) async throws -> Int? {
        try await onThread {
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10, source: source)
            connection.write(request)
            return try? connection.readReply().status
        }
    }

    static let healthz = RawHTTPConnection.requestBytes(method: "GET", target: Endpoint.healthz, headers: [:])

    @Test func newConnectionsPastAnAddressRateAreClosedAtAcceptAndOtherAddressesAreServed() async throws {
        guard !HardeningTests.binaryMissing else { return }
        let running = try HardeningTests.Running(arguments: ["--new-connections-per-address", "2"])
        defer { running.stop() }
        let port = running.server.port
        // Twenty connections opened back to back from one address: its bucket
        // holds two, and refills two a second, far slower than these come.
        let statuses = try await onThread { () -> [Int?] in
            let opened = try (0..<20).map { _ in
                try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10, source: "127.0.0.5")
            }
            return opened.map { connection in
                connection.write(Self.healthz)
                return try? connection.readReply().status
            }
        }
        #expect(statuses.prefix(2).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses.allSatisfy { $0 == 200 || $0 == nil }, "\(statuses)")
        #expect(statuses.contains(nil), "none was closed at accept: \(statuses)")

        // Another address is served meanwhile, push and feed.
        let push = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note(title: "other")]))
        let token = running.token
        let other = try await onThread { () -> [Int] in
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10, source: "127.0.0.6")
            let auth = ["Authorization": "Bearer \(token)"]
            connection.write(RawHTTPConnection.requestBytes(method: "POST", target: Endpoint.push, headers: auth, body: push))
            let pushed = try connection.readReply().status
            connection.write(RawHTTPConnection.requestBytes(method: "GET", target: Endpoint.changes, headers: auth))
            return [pushed, try connection.readReply().status]
        }
        #expect(other == [200, 200])

        // The limited address gets connections again once its bucket refills.
        #expect(try await waitUntil { try await Self.status(port: port, source: "127.0.0.5", request: Self.healthz) == 200 })
        // The log counts what was closed at accept, and names the address.
        #expect(
            try await waitUntil(60) { running.log.contains("connections closed at accept (new-connection rate)") },
            "\(running.log.suffix(2_000))")
        #expect(running.log.contains("most from 127.0.0.5"), "\(running.log.suffix(2_000))")
    }

    @Test func aFloodOfRefusedRequestsCostsTheLogAFewLinesAndOthersAreStillLogged() async throws {
        guard !HardeningTests.binaryMissing else { return }
        let running = try HardeningTests.Running(arguments: ["--new-connections-per-address", "0"])
        defer { running.stop() }
        let port = running.server.port
        let refused = RawHTTPConnection.requestBytes(
            method: "POST", target: Endpoint.push, headers: ["Authorization": "Bearer invalid"], body: Data("{}".utf8))
        // 300 refused pushes, each on its own connection (a 401 closes it).
        var statuses: [Int?] = []
        for _ in 0..<300 { statuses.append(try await Self.status(port: port, source: "127.0.0.7", request: refused)) }
        #expect(statuses.allSatisfy { $0 == 401 }, "\(Set(statuses.map { $0 ?? 0 }))")
        // A client with a live token is logged as always.
        let token = running.token
        let feed = try await onThread { () -> Int in
            let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 10, source: "127.0.0.8")
            connection.write(
                RawHTTPConnection.requestBytes(
                    method: "GET", target: Endpoint.changes, headers: ["Authorization": "Bearer \(token)"]))
            return try connection.readReply().status
        }
        #expect(feed == 200)
        #expect(try await waitUntil { running.log.contains("127.0.0.8 GET /v1/changes 200") }, "\(running.log.suffix(2_000))")
        // What was left out is counted in a line once its interval is over.
        #expect(
            try await waitUntil(60) { running.log.contains("401 answers not logged one by one") },
            "\(running.log.suffix(2_000))")
        let lines = running.log.split(separator: "\n")
        let refusedLines = lines.filter { $0.hasPrefix("127.0.0.7 POST /v1/push 401") }
        // At most a budget of lines for each interval the flood spanned (the
        // server's is 20 per 10 s; the flood may straddle a few intervals).
        #expect(refusedLines.count >= 1 && refusedLines.count <= 60, "\(refusedLines.count) lines for 300 refusals")
        #expect(lines.contains { $0.contains("refusals: in the last") && $0.contains("most from 127.0.0.7") })
    }
}
