import Foundation
import LoopbackHTTP
import NotesModel
import ProcessKit
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// The real `notesfs` binary: account, serve, SIGTERM, new-epoch.
@Suite struct ServeCommandTests {
    static let binary = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug/notesfs").path

    /// Runs the binary to completion; returns (exit code, stdout, stderr).
    static func run(_ arguments: [String]) throws -> (Int32, String, String) {
        let result = try MountFixture.run([binary] + arguments)
        return (result.status, result.standardOutput, result.standardError)
    }

    @Test func serveAnswersWithAnAddedTokenAndStopsCleanlyOnSIGTERM() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            skipLoudly("\(Self.binary) is not built; run swift build first")
            return
        }
        let data = try TemporaryDirectoryForTLS()
        defer { data.remove() }
        let dir = data.url.path
        let (addCode, tokenText, addMessage) = try await onThread { try Self.run(["account", "add", "dana", "--data", dir]) }
        #expect(addCode == 0, "\(addMessage)")
        let token = tokenText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(AccessToken(text: token) != nil)
        #expect(try await onThread { try Self.run(["account", "revoke", "nobody", "--data", dir]) }.0 == 1)
        #expect(try await onThread { try Self.run(["serve", "--listen", "nowhere"]) }.0 == 2)
        #expect(try await onThread { try Self.run(["serve", "--bogus"]) }.0 == 2)
        #expect(try await onThread { try Self.run(["serve", "--group-writers", "0"]) }.0 == 2)

        let logPath = data.url.appendingPathComponent("serve.log").path
        let serve = try SpawnedProcess(
            [Self.binary, "serve", "--listen", "127.0.0.1:0", "--data", dir],
            options: .init(standardOutput: .null, standardError: .file(logPath)), outputPath: logPath)
        defer { serve.kill() }
        func log() -> String { serve.output }
        // The first line says where it listens.
        #expect(try await waitUntil { log().contains("\n") || !serve.isRunning })
        let firstLine = log().split(separator: "\n").first.map(String.init) ?? ""
        let portText = firstLine.split(separator: ":").last?.prefix(while: { $0.isNumber }) ?? ""
        let port = try #require(UInt16(portText), "first line: \(firstLine)")
        let reply = try await onThread { () -> Reply in
            let connection = try RawHTTPConnection(port: port)
            let body = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note(body: "private words\n")]))
            connection.write(RawHTTPConnection.requestBytes(method: "POST", target: Endpoint.push, headers: ["Authorization": "Bearer \(token)"], body: body))
            return try connection.readReply()
        }
        #expect(reply.status == 200)
        serve.signal(SIGTERM)
        // An event with a generous ceiling: a server that fails to stop must
        // fail this test, not hang the whole run.
        let stopped = try await waitUntil(60) { !serve.isRunning }
        #expect(stopped, "notesfs serve did not stop within 60 s of SIGTERM")
        #expect(serve.exitStatus == 0)
        let text = log()
        #expect(text.contains("POST /v1/push 200"))
        #expect(text.contains("stopped"))
        #expect(!text.contains("private words"))

        let (listCode, list, _) = try await onThread { try Self.run(["account", "list", "--data", dir]) }
        #expect(listCode == 0)
        #expect(list.contains("dana"))
        let (epochCode, epochText, _) = try await onThread { try Self.run(["server", "new-epoch", "--data", dir]) }
        #expect(epochCode == 0)
        #expect(epochText.contains("New epoch"))
    }
}
