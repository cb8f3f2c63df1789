import Foundation
import LoopbackHTTP
import NotesModel
import SyncProtocol
import SyncServer
import Testing
import TestSupport

/// A real `notesfs serve` whose data directory sits on a small, full disk.
@Suite struct ServerDiskFullTests {
    /// Large pushes make SQLite spill its cache inside a push, where a full
    /// disk rolls the whole group transaction back; the last push of a group
    /// once reached COMMIT with no transaction left and answered 500.
    @Test func aFullDiskAnswersUnavailableNeverAnInternalError() async throws {
        guard let disk = SmallDisk(megabytes: 16) else {
            skipLoudly("mounting a tmpfs needs root")
            return
        }
        defer { disk.unmount() }
        let server = ServerProcess(dataDirectory: disk.path + "/server")
        defer { server.stop() }
        let tokenPath = disk.path + "/token"
        try server.addAccount("full", tokenPath: tokenPath)
        let token = try String(contentsOfFile: tokenPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try server.start()

        let port = server.port
        let replies = await withTaskGroup(of: [Reply].self) { group in
            for worker in 0..<4 {
                group.addTask {
                    (try? await onThread { () -> [Reply] in
                        let device = DeviceID()
                        var replies: [Reply] = []
                        for round in 0..<8 {
                            let changes = (0..<8).map { index in
                                Make.note(title: "n\(worker)-\(round)-\(index)", body: String(repeating: "line \(round)\n", count: 45_000))
                            }
                            let body = try WireCoding.encoder().encode(PushRequest(device: device, changes: changes))
                            do {
                                let connection = try RawHTTPConnection(port: port, receiveTimeoutSeconds: 300)
                                _ = connection.write(
                                    RawHTTPConnection.requestBytes(
                                        method: "POST", target: Endpoint.push,
                                        headers: ["Authorization": "Bearer \(token)"], body: body))
                                replies.append(try connection.readReply())
                            } catch {
                                replies.append(Reply(status: -1, headers: [:], body: Data("\(error)".utf8)))
                            }
                        }
                        return replies
                    }) ?? []
                }
            }
            var all: [Reply] = []
            for await replies in group { all += replies }
            return all
        }
        var seen: [Int: Int] = [:]
        for reply in replies { seen[reply.status, default: 0] += 1 }
        if let failed = replies.first(where: { $0.status == -1 }) {
            print("ServerDiskFullTests: \(seen[-1] ?? 0) requests failed in transport, e.g. \(failed.text)")
        }
        let internalErrors = replies.filter { $0.status == 500 }.map { $0.text }
        let log = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
        #expect(seen[500] == nil, "500s: \(internalErrors.prefix(2)); log: \(log.suffix(600))")
        #expect(seen[503, default: 0] > 0, "the disk never filled: \(seen), free \(disk.freeBytes); log: \(log.suffix(600))")
        // (-1: the connection failed; the HTTP layer's business, not the store's.)
        #expect(Set(seen.keys).isSubset(of: [200, 503, -1]), "\(seen)")
        #expect(!log.contains("no transaction is active"))
    }
}
