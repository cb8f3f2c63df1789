import Foundation

/// Tells systemd how a `Type=notify` service is doing (`READY=1` once the
/// mount is up or the server listens, `STOPPING=1` at a stop), through the
/// datagram socket systemd names in `$NOTIFY_SOCKET`. Without that variable
/// (not started by systemd) it does nothing.
struct SystemdNotifier: Sendable {
    /// The socket path; a leading `@` names an abstract socket.
    let socketPath: String?

    /// Reads `$NOTIFY_SOCKET` once and removes it from the environment, so
    /// no program this process starts reports in its name.
    static func fromEnvironment() -> SystemdNotifier {
        let path = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"]
        unsetenv("NOTIFY_SOCKET")
        return SystemdNotifier(socketPath: path)
    }

    init(socketPath: String?) {
        guard let socketPath, socketPath.hasPrefix("/") || socketPath.hasPrefix("@") else {
            self.socketPath = nil
            return
        }
        self.socketPath = socketPath
    }

    /// Sends `state` (for example `READY=1`); returns false when there is no
    /// socket or the send failed (systemd then times the start out, which
    /// shows in `systemctl status`).
    @discardableResult
    func send(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        // An abstract name is exactly its bytes; a path name ends at its NUL.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        return sent == message.count
    }
}
