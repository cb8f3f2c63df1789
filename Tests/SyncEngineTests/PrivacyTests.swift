import Foundation
import Testing
import TestSupport

/// Notes, tokens and the sync socket are private to their owner on both
/// sides, and a token does not travel in clear text by accident.
@Suite(.serialized) struct PrivacyTests {
    static func mode(_ path: String) -> mode_t? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return status.st_mode & 0o777
    }

    static func expectPrivate(_ paths: [String], directory: Bool) {
        for path in paths {
            let found = mode(path)
            #expect(found != nil, "\(path) is missing")
            if let found { #expect(found & 0o077 == 0, "\(path) has mode \(String(found, radix: 8))") }
            if directory, let found { #expect(found == 0o700, "\(path) has mode \(String(found, radix: 8))") }
        }
    }

    @Test func dataDirectoriesDatabasesLogsAndSocketsAreOwnerOnlyOnBothSides() throws {
        guard MountFixture.shouldRun else { return }
        let cluster = try SyncCluster(mounts: 0)
        defer { cluster.remove() }
        // A profile directory made by someone else with the usual 0755 is tightened.
        let mount = try MountFixture(mount: false)
        cluster.mounts.append(mount)
        chmod(mount.dataDirectory, 0o755)
        try mount.mount(extraArguments: ["--server", cluster.server.url, "--token-file", cluster.tokenPath])
        _ = try cluster.shell(mount, "echo private > secret.md")
        try cluster.waitFor("the note reaches the server") {
            try cluster.notesfs(["sync", "--wait", "--data", mount.dataDirectory]).status == 0
        }
        let server = cluster.server.dataDirectory
        Self.expectPrivate([server, mount.dataDirectory], directory: true)
        let serverFiles = try FileManager.default.contentsOfDirectory(atPath: server).map { server + "/" + $0 }
        #expect(serverFiles.contains(server + "/server.sqlite-wal"))
        Self.expectPrivate(serverFiles, directory: false)
        let clientFiles = ["notes.sqlite", "notes.sqlite-wal", "notes.sqlite-shm", "mount.log", "sync.sock", "sync.json"]
        Self.expectPrivate(clientFiles.map { mount.dataDirectory + "/" + $0 }, directory: false)
    }

    @Test func plainHTTPToAnotherMachineNeedsInsecureHTTPAndAReadableTokenFileIsWarnedAbout() throws {
        guard MountFixture.shouldRun, let binary = MountFixture.binaryPath else { return }
        let mount = try MountFixture(mount: false)
        defer { mount.remove() }
        let token = mount.directory.file("token")
        try Data("nfs_0123456789abcdef01234567_\(String(repeating: "A", count: 43))\n".utf8)
            .write(to: URL(fileURLWithPath: token))
        chmod(token, 0o644)
        let remote = "http://192.0.2.7:8080"
        let refused = try MountFixture.run(
            [binary, "mount", mount.mountpoint, "--data", mount.dataDirectory, "--server", remote, "--token-file", token])
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("refusing plain http to 192.0.2.7"), "\(refused.standardError)")
        #expect(refused.standardError.contains("unencrypted"))
        #expect(refused.standardError.contains("--insecure-http"))
        #expect(!FileManager.default.fileExists(atPath: mount.dataDirectory + "/sync.json"))
        #expect(!mount.isMounted)

        let allowed = try MountFixture.run(
            [binary, "mount", mount.mountpoint, "--data", mount.dataDirectory, "--server", remote, "--token-file", token,
             "--insecure-http"])
        #expect(allowed.status == 0, "\(allowed.standardError)")
        #expect(allowed.standardError.contains("can be read by other users"), "\(allowed.standardError)")
        #expect(allowed.standardError.contains("chmod 600"))
        mount.unmount()
        // Remembered with the server: the next mount needs no flag, and warns no more once the file is private.
        chmod(token, 0o600)
        let again = try MountFixture.run([binary, "mount", mount.mountpoint, "--data", mount.dataDirectory])
        #expect(again.status == 0, "\(again.standardError)")
        #expect(!again.standardError.contains("can be read by other users"))
        mount.unmount()
        // Loopback needs no flag.
        let loopback = try MountFixture.run(
            [binary, "mount", mount.mountpoint, "--data", mount.dataDirectory, "--server", "http://127.0.0.1:9",
             "--token-file", token])
        #expect(loopback.status == 0, "\(loopback.standardError)")
    }
}
