import Foundation
import HTTPServer
@testable import NotesStore
import SyncEngine
import SyncServer
import Testing
import TestSupport

/// An https server with a self-signed certificate: untrusted (the run fails,
/// status points at `--ca-file`, nothing is refused) until the transport is
/// given that certificate as its CA file.
@Suite struct CertificateTests {
    @Test func anUntrustedCertificateFailsTheRunUntilTheCAFileIsGiven() async throws {
        let openssl = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: openssl) else {
            let why = "openssl is missing, so --ca-file was not tested"
            if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" { Issue.record(Comment(rawValue: why)) }
            print("SKIPPED: \(why)")
            return
        }
        let world = try await SyncWorld()
        defer { world.remove() }
        let key = world.directory.file("key.pem"), cert = world.directory.file("cert.pem")
        let generated = try await onThread {
            try MountFixture.run([
                openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert,
            ])
        }
        #expect(generated.status == 0, "\(generated.standardError)")
        let http = try HTTPServer(
            server: world.server,
            configuration: HTTPServer.Configuration(
                address: ListenAddress(host: "127.0.0.1", port: 0),
                requestBodyBytesMax: world.server.configuration.limits.requestBodyBytesMax,
                tls: (try String(contentsOfFile: cert, encoding: .utf8), try String(contentsOfFile: key, encoding: .utf8))),
            logger: SilentLogger())
        defer { http.stop() }
        let url = try #require(URL(string: "https://127.0.0.1:\(http.port)"))
        let store = try NotesStore(path: world.directory.file("a.sqlite"))
        try store.createNote(in: .root, title: "n.md", body: Data("over tls\n".utf8))

        let untrusted = HTTPSyncTransport(baseURL: url, token: world.token)
        let failed = await (try SyncEngine(replica: store.replica, transport: untrusted)).sync()
        guard case .failed(.untrustedCertificate) = failed else {
            Issue.record("expected an untrusted certificate, got \(failed)")
            return
        }
        #expect(try store.status().sync.lastError?.contains("see --ca-file") == true)
        #expect(try store.status().pendingCount == 1)
        #expect(try store.status().refusals.isEmpty)

        let trusted = HTTPSyncTransport(baseURL: url, token: world.token, caFile: cert)
        #expect(await (try SyncEngine(replica: store.replica, transport: trusted)).sync() == .succeeded)
        #expect(try store.status().pendingCount == 0)
        #expect(try store.lookup(in: .root, name: "n (not synced).md") == nil)
    }
}
