import Foundation
import HTTPServer
import SyncServer
import SyncServerSQLite
import Testing
import TestSupport
@testable import NotesStore

/// TLS 1.2 at least on both sides (the client even where OpenSSL's own
/// settings would allow less), and a private certificate trusted by a mount
/// through `--ca-file` (remembered in the profile) or the standard `SSL_CERT_FILE`.
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
        try MountFixture.waitFor("the note reaches the server over TLS", mounts: [mount]) {
            try MountFixture.run([binary, "sync", "--wait", "--data", mount.dataDirectory]).status == 0
        }
        #expect(try mount.checkedShell("cat .notesfs/status").contains("certificate") == false)
    }

    /// `notesfs` with SSL_CERT_FILE and CURL_CA_BUNDLE unset, so only `--ca-file` can trust a private certificate.
    static func notesfs(_ binary: String, _ arguments: [String], environment: [String] = []) throws -> MountFixture.Result {
        try MountFixture.run(["/usr/bin/env", "-u", "SSL_CERT_FILE", "-u", "CURL_CA_BUNDLE"] + environment + [binary] + arguments)
    }

    @Test func aMountGivenCAFileTrustsASelfSignedServerRemembersItAndForgetsItWithAnEmptyOne() throws {
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
        let data = ["--data", mount.dataDirectory]
        func syncNow() throws -> MountFixture.Result { try Self.notesfs(binary, ["sync", "--wait"] + data) }
        func profile() throws -> String { try String(contentsOfFile: mount.dataDirectory + "/sync.json", encoding: .utf8) }

        // The system's certificates do not include a self-signed one.
        let plain = try Self.notesfs(
            binary, ["mount", mount.mountpoint] + data + ["--server", server.url, "--token-file", token])
        #expect(plain.status == 0, "\(plain.standardError)")
        _ = try mount.checkedShell("echo one > one.md")
        let untrusted = try syncNow()
        #expect(untrusted.status == 1)
        #expect(untrusted.standardError.contains("certificate not trusted") && untrusted.standardError.contains("--ca-file"),
            "\(untrusted.standardError)")
        mount.unmount()

        let trusted = try Self.notesfs(binary, ["mount", mount.mountpoint] + data + ["--ca-file", cert])
        #expect(trusted.status == 0, "\(trusted.standardError)")
        #expect(try syncNow().status == 0)
        let saved = try profile()
        #expect(saved.contains(#""caFile" : "\#(cert)""#), "\(saved)")
        mount.unmount()

        // Remembered in sync.json like --server: a mount without flags trusts it.
        let remembered = try Self.notesfs(binary, ["mount", mount.mountpoint] + data)
        #expect(remembered.status == 0, "\(remembered.standardError)")
        _ = try mount.checkedShell("echo two > two.md")
        #expect(try syncNow().status == 0)
        mount.unmount()

        // --ca-file '' goes back to the system's certificates.
        let forgotten = try Self.notesfs(binary, ["mount", mount.mountpoint] + data + ["--ca-file", ""])
        #expect(forgotten.status == 0, "\(forgotten.standardError)")
        let cleared = try profile()
        #expect(!cleared.contains("caFile"), "\(cleared)")
        _ = try mount.checkedShell("echo three > three.md")
        #expect(try syncNow().standardError.contains("certificate not trusted"))
    }

    /// An OpenSSL configuration that lets any TLS version and cipher through,
    /// so only notesfs's own minimum can refuse TLS 1.0 and 1.1.
    static let permissiveOpenSSLConfiguration = """
        openssl_conf = default_conf
        [default_conf]
        ssl_conf = ssl_sect
        [ssl_sect]
        system_default = system_default_sect
        [system_default_sect]
        MinProtocol = None
        CipherString = DEFAULT:@SECLEVEL=0
        """

    /// A free TCP port on loopback (bound, noted, closed).
    static func freePort() throws -> UInt16 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        guard bound else { throw MountFixture.Failure("cannot bind a loopback port") }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test(arguments: [("-tls1", false), ("-tls1_1", false), ("-tls1_2", true)])
    func theClientRefusesServersBelowTLS1Point2EvenWhereOpenSSLWouldAllowThem(version: String, handshakes: Bool) throws {
        guard MountFixture.shouldRun, let binary = MountFixture.binaryPath else { return }
        let directory = try TemporaryDirectory(prefix: "notesfs-tls")
        defer { directory.remove() }
        guard let (cert, key) = try Self.certificate(in: directory) else { return }
        let configuration = directory.file("openssl.cnf")
        try Data(Self.permissiveOpenSSLConfiguration.utf8).write(to: URL(fileURLWithPath: configuration))
        // A TLS server of that one version that answers a GET with a page that is not ours.
        let port = try Self.freePort()
        let serverLog = directory.file("s_server.log")
        let server = try SpawnedProcess(
            [
                "/usr/bin/env", "OPENSSL_CONF=\(configuration)", Self.openssl, "s_server", "-accept", "127.0.0.1:\(port)",
                version, "-cipher", "DEFAULT:@SECLEVEL=0", "-cert", cert, "-key", key, "-www",
            ], outputPath: serverLog)
        defer { server.stop() }
        try MountFixture.waitFor("openssl s_server accepts connections", mounts: []) {
            server.output.contains("ACCEPT")
        }
        let token = directory.file("token")
        try Data("nfs_0123456789abcdef01234567_\(String(repeating: "A", count: 43))\n".utf8)
            .write(to: URL(fileURLWithPath: token))
        chmod(token, 0o600)
        let mount = try MountFixture(mount: false)
        defer { mount.remove() }
        let mounted = try Self.notesfs(
            binary,
            ["mount", mount.mountpoint, "--data", mount.dataDirectory, "--server", "https://127.0.0.1:\(port)",
             "--token-file", token, "--ca-file", cert], environment: ["OPENSSL_CONF=\(configuration)"])
        #expect(mounted.status == 0, "\(mounted.standardError)")
        // Nothing to push: s_server's page answers GETs only.
        let synced = try Self.notesfs(binary, ["sync", "--wait", "--data", mount.dataDirectory])
        #expect(synced.status == 1, "s_server speaks no notesfs: \(synced.standardOutput)")
        // A handshake that completed reaches s_server's page, which is no notesfs answer.
        let reachedHTTP = !synced.standardError.contains("cannot reach the server")
            && !synced.standardError.contains("certificate not trusted")
        #expect(reachedHTTP == handshakes, "\(version): \(synced.standardError)")
    }
}
