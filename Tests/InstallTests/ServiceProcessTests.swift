import Foundation
import Testing
import TestSupport

/// What the units rely on in the programs they start: `Type=notify` (READY=1
/// once serving, STOPPING=1 at a stop) and, for `Restart=on-failure`, a mount
/// started again after its process was killed.
@Suite(.serialized) struct ServiceProcessTests {
    @Test(arguments: [false, true])
    func serveTellsSystemdWhenItIsReadyAndWhenItStops(abstractSocket: Bool) throws {
        guard let notesfs = Programs.notesfs() else { return }
        let scratch = try TemporaryDirectory(prefix: "notesfs-notify")
        defer { scratch.remove() }
        let socket = try NotifySocket(path: abstractSocket ? "@notesfs-test-\(UUID().uuidString)" : scratch.file("notify"))
        defer { socket.close() }
        let process = try SpawnedProcess(
            ["/usr/bin/env", "NOTIFY_SOCKET=\(socket.path)", notesfs, "serve", "--listen", "127.0.0.1:0", "--data", scratch.file("server")],
            outputPath: scratch.file("serve.log"))
        defer { process.stop() }
        #expect(socket.receive() == "READY=1", "\(process.output)")
        process.signal(SIGTERM)
        #expect(socket.receive() == "STOPPING=1", "\(process.output)")
        #expect(process.wait() == 0, "\(process.output)")
    }

    @Test func aForegroundMountTellsSystemdAndAMountStartedAfterAKillDetachesTheDeadOne() throws {
        guard MountFixture.shouldRun, let notesfs = MountFixture.binaryPath else { return }
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        let socket = try NotifySocket(path: fixture.directory.file("notify"))
        defer { socket.close() }
        // What the unit runs.
        let command = [
            "/usr/bin/env", "NOTIFY_SOCKET=\(socket.path)", notesfs, "mount", fixture.mountpoint, "--data",
            fixture.dataDirectory, "--foreground",
        ]
        let first = try SpawnedProcess(command, outputPath: fixture.directory.file("first.log"))
        defer { first.stop() }
        #expect(socket.receive() == "READY=1", "\(first.output)")
        #expect(fixture.isMounted)
        try fixture.shell("printf 'kept\\n' > note.md")

        // A crash: the kernel keeps the mount, which now fails every call.
        first.kill()
        #expect(fixture.isMounted)

        // The restart detaches the dead mount and mounts again.
        let second = try SpawnedProcess(command, outputPath: fixture.directory.file("second.log"))
        defer { second.stop() }
        #expect(socket.receive() == "READY=1", "\(second.output)")
        #expect(second.output.contains("Detached the mount on \(fixture.mountpoint)"), "\(second.output)")
        let read = try fixture.shell("cat note.md")
        #expect(read.standardOutput == "kept\n", "\(read.standardError)")
        second.signal(SIGTERM)
        #expect(socket.receive() == "STOPPING=1", "\(second.output)")
        #expect(second.wait() == 0, "\(second.output)")
        #expect(!fixture.isMounted)
    }
}

/// The datagram socket systemd listens on for `sd_notify` messages; a path
/// starting with `@` is an abstract one, as systemd often uses.
final class NotifySocket {
    let path: String
    private let descriptor: Int32
    /// How long `receive` waits for one message before giving up: a guard
    /// against a hang, never a measurement.
    static let waitSeconds: Int32 = 30

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw MountFixture.Failure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw MountFixture.Failure("bind \(path): \(reason)")
        }
    }

    /// The next message, or nil when none came in time.
    func receive() -> String? {
        let deadline = Date().addingTimeInterval(Double(Self.waitSeconds))
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1_000))
            let ready = poll(&poller, 1, left)
            if ready == 1 { break }
            if ready < 0 && errno == EINTR { continue }
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    func close() {
        Glibc.close(descriptor)
        if !path.hasPrefix("@") { unlink(path) }
    }
}
