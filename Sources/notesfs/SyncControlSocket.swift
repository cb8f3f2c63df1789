import Foundation
import FuseKit
import NotesFS
import NotesStore
import SyncEngine
import Synchronization

/// A unix socket in the data directory (`sync.sock`) through which
/// `notesfs sync` and `notesfs status` reach the running mount.
///
/// One request line per connection:
/// - `sync [allow-mass-delete | restore-held]` → `note <text>` (what the
///   confirmation or restore did), then `started`: a run is requested and the
///   command returns.
/// - `sync wait [allow-mass-delete | restore-held] [progress]` → `note <text>`,
///   `progress <text>` lines (with `progress`), then `ok`, `held <why>` (the
///   mass-delete guard holds deletions) or `failed <why>`.
/// - `status` → one line: what the engine is doing (`LiveSync` as JSON).
/// - `wire` → the transport's counters as JSON (benchmarks).
final class SyncControlSocket: Sendable {
    static func path(_ location: DataLocation) -> String {
        location.directory.appendingPathComponent("sync.sock").path
    }

    /// Longest request line accepted.
    static let requestBytesMax = 256

    let path: String
    private let scheduler: SyncScheduler
    private let transport: HTTPSyncTransport
    private let log: MountLog
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)

    init(path: String, scheduler: SyncScheduler, transport: HTTPSyncTransport, log: MountLog) throws(CommandError) {
        self.path = path
        self.scheduler = scheduler
        self.transport = transport
        self.log = log
        // The mount lock is held, so a socket file left here is from a dead mount.
        unlink(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .failed("cannot make the sync control socket: \(String(cString: strerror(errno)))") }
        guard Self.withAddress(path, { bind(descriptor, $0, $1) }) == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .failed("cannot listen on \(path) (\(reason)); use a shorter --data path (sockets allow 107 bytes)")
        }
        chmod(path, 0o600)
        listener = descriptor
    }

    /// Calls `body` with a `sockaddr_un` for `path`; -1 with ENAMETOOLONG when it does not fit.
    static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            errno = ENAMETOOLONG
            return -1
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "notesfs-sync-socket"
        thread.start()
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            let thread = Thread { [self] in
                serve(connection)
                close(connection)
            }
            thread.name = "notesfs-sync-client"
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = Self.readLine(connection) else { return }
        let words = Set(request.split(separator: " ").map(String.init))
        let send = { (line: String) in _ = Self.writeLine(connection, line) }
        switch request.split(separator: " ").first.map(String.init) {
        case "sync":
            let action: SyncScheduler.HeldDeletionsAction? =
                words.contains("allow-mass-delete") ? .allow : words.contains("restore-held") ? .restore : nil
            if let action {
                do {
                    send("note " + (try scheduler.settleHeldDeletions(action)))
                } catch {
                    send("failed the held deletions could not be changed: \(error)")
                    return
                }
            }
            if !words.contains("wait") {
                scheduler.requestRun()
                send("started")
                return
            }
            let outcome = Mutex<SyncRunOutcome?>(nil)
            let finished = DispatchSemaphore(value: 0)
            let scheduler = scheduler
            let withProgress = words.contains("progress")
            Task {
                let result = await scheduler.syncNow(withProgress: withProgress)
                outcome.withLock { $0 = result }
                finished.signal()
            }
            while finished.wait(timeout: .now() + 0.25) == .timedOut {
                if withProgress {
                    let progress = scheduler.progress
                    if progress.running { send("progress " + progress.line) }
                }
            }
            switch outcome.withLock({ $0 }) {
            case .succeeded?: send("ok")
            case .failed(let error)?: send("failed " + error.description)
            case .held(let reason)?: send("held " + reason)
            case .storeFailed(let reason)?: send("failed " + reason)
            case .blocked(let reason)?: send("failed sync is off: " + reason)
            case nil: send("failed the mount stopped")
            }
        case "status":
            let data = (try? JSONEncoder().encode(scheduler.live)) ?? Data("{}".utf8)
            send(String(decoding: data, as: UTF8.self))
        case "wire":
            let data = (try? JSONEncoder().encode(transport.wireCounters)) ?? Data("{}".utf8)
            send(String(decoding: data, as: UTF8.self))
        default:
            send("failed unknown request")
        }
    }

    static func readLine(_ connection: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < requestBytesMax {
            let count = read(connection, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            if byte == 10 { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    @discardableResult
    static func writeLine(_ connection: Int32, _ line: String) -> Bool {
        let bytes = Array((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            offset += count
        }
        return true
    }

    /// Client side: sends `request` and calls `onLine` for each answer line
    /// until the mount closes the connection. False when no mount listens.
    static func request(path: String, _ request: String, onLine: (String) -> Void) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard withAddress(path, { connect(descriptor, $0, $1) }) == 0 else { return false }
        guard writeLine(descriptor, request) else { return false }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            buffer += chunk[0..<count]
            while let newline = buffer.firstIndex(of: 10) {
                onLine(String(decoding: buffer[..<newline], as: UTF8.self))
                buffer.removeSubrange(...newline)
            }
        }
        return true
    }
}
