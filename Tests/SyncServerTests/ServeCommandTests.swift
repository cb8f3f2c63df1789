import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Testing

/// The real `notesfs` binary: account, serve, SIGTERM, new-epoch.
@Suite struct ServeCommandTests {
    static let binary = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug/notesfs").path

    /// Runs the binary to completion; returns (exit code, stdout, stderr).
    static func run(_ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
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

        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--data", dir]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let reader = errors.fileHandleForReading
        let firstLine = try await onThread { () -> String in
            var text = Data()
            while !text.contains(UInt8(ascii: "\n")) {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                text.append(chunk)
            }
            return String(decoding: text, as: UTF8.self)
        }
        let portText = firstLine.split(separator: ":").last?.prefix(while: { $0.isNumber }) ?? ""
        let port = try #require(UInt16(portText), "first line: \(firstLine)")
        let reply = try await onThread { () -> Reply in
            let connection = try RawHTTPConnection(port: port)
            let body = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note(body: "private words\n")]))
            connection.write(RawHTTPConnection.requestBytes(method: "POST", target: Endpoint.push, headers: ["Authorization": "Bearer \(token)"], body: body))
            return try connection.readResponse()
        }
        #expect(reply.status == 200)
        let began = ContinuousClock.now
        kill(process.processIdentifier, SIGTERM)
        // Poll instead of waitUntilExit alone: a server that fails to stop must
        // fail this test, not hang the whole run.
        while process.isRunning && ContinuousClock.now - began < .seconds(20) {
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            Issue.record("notesfs serve did not stop within 20 s of SIGTERM")
            kill(process.processIdentifier, SIGKILL)
        }
        try await onThread { process.waitUntilExit() }
        #expect(ContinuousClock.now - began < .seconds(5))
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let log = firstLine + String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("POST /v1/push 200"))
        #expect(log.contains("stopped"))
        #expect(!log.contains("private words"))

        let (listCode, list, _) = try await onThread { try Self.run(["account", "list", "--data", dir]) }
        #expect(listCode == 0)
        #expect(list.contains("dana"))
        let (epochCode, epochText, _) = try await onThread { try Self.run(["server", "new-epoch", "--data", dir]) }
        #expect(epochCode == 0)
        #expect(epochText.contains("New epoch"))
    }
}
