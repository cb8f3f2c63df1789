import Foundation
import ProcessKit
import Testing
import TestSupport

/// Several processes opening a fresh data directory at once migrate it
/// exactly once: the losers wait for the write lock and find the work done.
@Suite(.serialized) struct FirstStartRaceTests {
    @Test func serveAndAccountAddOnAFreshDirectoryBothStart() throws {
        guard let binary = MountFixture.binaryPath else {
            skipLoudly("the notesfs binary was not built")
            return
        }
        let directory = try TemporaryDirectory(prefix: "notesfs-race")
        defer { directory.remove() }
        for round in 0..<8 {
            let data = directory.file("server\(round)")
            let log = directory.file("serve\(round).log")
            let serve = try SpawnedProcess(
                [binary, "serve", "--listen", "127.0.0.1:0", "--data", data],
                options: .init(standardOutput: .null, standardError: .file(log)), outputPath: log)
            defer { serve.stop() }
            let added = try MountFixture.run([binary, "account", "add", "racer", "--data", data])
            #expect(added.status == 0, "round \(round): \(added.standardError)")
            let deadline = Date().addingTimeInterval(60)
            var text = ""
            while Date() < deadline {
                text = serve.output
                if text.contains("listening on") || !serve.isRunning { break }
                usleep(20_000)
            }
            #expect(text.contains("listening on"), "round \(round): \(text)")
            #expect(!text.contains("already exists"), "round \(round): \(text)")
        }
    }

    @Test func twoImportsIntoAFreshProfileBothSucceed() throws {
        guard let binary = MountFixture.binaryPath else {
            skipLoudly("the notesfs binary was not built")
            return
        }
        let directory = try TemporaryDirectory(prefix: "notesfs-race")
        defer { directory.remove() }
        let source = directory.file("tree")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try Data("milk\n".utf8).write(to: URL(fileURLWithPath: source + "/todo.md"))
        for round in 0..<16 {
            let data = directory.file("profile\(round)")
            let first = try ChildProcess.spawn(
                [binary, "import", source, "--data", data],
                .init(standardOutput: .file(directory.file("a\(round).out")), standardError: .file(directory.file("a\(round).err"))))
            let second = try MountFixture.run([binary, "import", source, "--data", data])
            let status = ChildProcess.wait(first)
            let firstErrors = (try? String(contentsOfFile: directory.file("a\(round).err"), encoding: .utf8)) ?? ""
            #expect(ChildProcess.exitStatus(status) == 0, "round \(round): \(firstErrors)")
            #expect(second.status == 0, "round \(round): \(second.standardError)")
            #expect(!(firstErrors + second.standardError).contains("already exists"))
        }
    }
}
