import Foundation
import Synchronization

/// Deadlines for the phases of a connection that libmicrohttpd times only by
/// idleness: a client must send a request's whole head within
/// `headSeconds` of connecting or of its previous answer, and the whole body
/// within `bodySeconds` of the head. A slow client that trickles one byte
/// every few seconds never looks idle; this cuts it off anyway, so each slow
/// connection costs a bounded time.
///
/// A task shuts down (never closes) the socket of a late connection;
/// libmicrohttpd then sees the end of the stream and closes it itself. The
/// table is updated by libmicrohttpd's callbacks, and a connection leaves it
/// (on its close notification) before libmicrohttpd closes its socket, so the
/// timer never touches a socket number reused by another connection.
final class ConnectionDeadlines: Sendable {
    enum Phase {
        /// Waiting for (the rest of) a request head.
        case head
        /// Receiving a body.
        case body
        /// A handler runs or an answer is being sent: no deadline.
        case working
    }

    private struct Entry {
        let socket: Int32
        var deadline: ContinuousClock.Instant?
    }

    private let headSeconds: Int
    private let bodySeconds: Int
    private let entries = Mutex<[UInt: Entry]>([:])
    private let cutOff = Atomic<Int>(0)
    private let sweeper = Mutex<Task<Void, Never>?>(nil)

    init(headSeconds: Int, bodySeconds: Int) {
        self.headSeconds = headSeconds
        self.bodySeconds = bodySeconds
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                guard let self else { return }
                self.sweep()
            }
        }
        sweeper.withLock { $0 = task }
    }

    deinit { stop() }

    /// Connections cut off so far.
    var cutOffCount: Int { cutOff.load(ordering: .relaxed) }

    func opened(_ connection: OpaquePointer, socket: Int32) {
        guard socket >= 0 else { return }
        let deadline = deadline(for: .head)
        entries.withLock { $0[Self.key(connection)] = Entry(socket: socket, deadline: deadline) }
    }

    func closed(_ connection: OpaquePointer) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(connection)) }
    }

    /// The connection moved to `phase`; its deadline starts now.
    func enter(_ phase: Phase, _ connection: OpaquePointer) {
        let deadline = deadline(for: phase)
        entries.withLock { entries in
            let key = Self.key(connection)
            guard entries[key] != nil else { return }
            entries[key]?.deadline = deadline
        }
    }

    func stop() { sweeper.withLock { $0?.cancel() } }

    private func deadline(for phase: Phase) -> ContinuousClock.Instant? {
        switch phase {
        case .head: .now + .seconds(headSeconds)
        case .body: .now + .seconds(bodySeconds)
        case .working: nil
        }
    }

    private func sweep() {
        let now = ContinuousClock.now
        entries.withLock { entries in
            for (key, entry) in entries {
                guard let deadline = entry.deadline, deadline < now else { continue }
                shutdown(entry.socket, Int32(SHUT_RDWR))
                entries[key]?.deadline = nil
                cutOff.add(1, ordering: .relaxed)
            }
        }
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: connection)) }
}
