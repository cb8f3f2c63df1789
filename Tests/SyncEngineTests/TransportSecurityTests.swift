import Foundation
import HTTPServer
import SyncServer
import Testing
import TestSupport

/// TLS 1.2 at least on the server, and the standard `SSL_CERT_FILE` trusted
/// by a mount like `--ca-file`.
@Suite(.serialized) struct TransportSecurityTests {
    static let openssl = "/usr/bin/openssl"

    /// A self-signed certificate for 127.0.0.1 in `directory`: (cert, key) paths.
    static func certificate(in directory: TemporaryDirectory) throws -> (cert: String, key: String)? {
        guard FileManager.default.isExecutableFile(atPath: openssl) else {
            let why = "openssl is missing, so TLS was not tested"
            if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" { Issue.record(Comment(rawValue: why)) }
            print("SKIPPED: \(why)")
            return nil
        }
        let key = directory.file("key.pem"), cert = directory.file("cert.pem")
        let result = try MountFixture.run([
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert,
        ])
        #expect(result.status == 0, "\(result.standardError)")
        return (cert, key)
    }

    @Test(arguments: [("-tls1", false), ("-tls1_1", false), ("-tls1_2", true)])
    func theServerRefusesTLSBelow1Point2(version: String, completes: Bool) throws {
        let directory = try TemporaryDirectory(prefix: "notesfs-tls")
        defer { directory.remove() }
        guard let (cert, key) = try Self.certificate(in: directory) else { return }
        let store = try SQLiteServerStore(path: directory.file("server.sqlite"))
        let http = try HTTPServer(
            server: SyncServer(store: store),
            configuration: HTTPServer.Configuration(
                address: ListenAddress(host: "127.0.0.1", port: 0), requestBodyBytesMax: 1 << 20,
                tls: (try String(contentsOfFile: cert, encoding: .utf8), try String(contentsOfFile: key, encoding: .utf8))),
            logger: SilentLogger())
        defer { http.stop() }
        // SECLEVEL=0 lets this client offer the old versions at all.
        let result = try MountFixture.run([
            "/bin/bash", "-c",
            "echo | timeout 60 \(Self.openssl) s_client -connect 127.0.0.1:\(http.port) \(version) "
                + "-cipher 'DEFAULT:@SECLEVEL=0' 2>&1",
        ])
        let established = result.status == 0 && result.standardOutput.contains("Cipher is ")
            && !result.standardOutput.contains("Cipher is (NONE)")
        #expect(established == completes, "\(version): \(result.standardOutput.suffix(800))")
    }

    @Test func aMountTrustsTheCertificatesNamedBySSLCertFile() throws {
        guard MountFixture.shouldRun, let binary = MountFixture.binaryPath else { return }
        let directory = try TemporaryDirectory(prefix: "notesfs-tls")
        defer { directory.remove() }
        guard let (cert, key) = try Self.certificate(in: directory) else { return }
        let server = ServerProcess(dataDirectory: directory.file("server"))
        server.extraArguments = ["--tls-cert", cert, "--tls-key", key]
        defer { server.stop() }
        let token = directory.file("token")
        try server.addAccount("tls", tokenPath: token)
        try server.start()
        let mount = try MountFixture(mount: false)
        defer { mount.remove() }
        let mounted = try MountFixture.run([
            "/usr/bin/env", "SSL_CERT_FILE=\(cert)", binary, "mount", mount.mountpoint, "--data", mount.dataDirectory,
            "--server", server.url, "--token-file", token,
        ])
        #expect(mounted.status == 0, "\(mounted.standardError)")
        _ = try mount.checkedShell("echo trusted > over-tls.md")
        try MountFixture.waitFor("the note reaches the server over TLS", mounts: [mount], seconds: 20) {
            try MountFixture.run([binary, "sync", "--wait", "--data", mount.dataDirectory]).status == 0
        }
        #expect(try mount.checkedShell("cat .notesfs/status").contains("certificate") == false)
    }
}
