import Dispatch
import Foundation
import Synchronization

/// A bounded pool of connections for one process. Each connection lives on
/// its own serial queue, so libpq's blocking calls never run on Swift's
/// cooperative threads. Callers beyond the pool's size wait in line, at most
/// `waitersMax` of them and each at most `acquireTimeoutSeconds`; past either
/// bound the call fails at once with `.poolExhausted`, a clear "try later".
///
/// A connection that breaks (the database restarted) is dropped and the next
/// use connects again; an operation that failed on a connection that had
/// worked before runs once more on a fresh one (callers make their
/// operations safe to repeat: reads are, pushes are through idempotency).
public final class PostgresPool: Sendable {
    public struct Options: Sendable {
        public var connectionsMax: Int
        public var waitersMax: Int
        public var acquireTimeoutSeconds: Double
        public var applicationName: String
        /// Session settings for every connection (see `PostgresConnection.init`).
        public var settings: [PostgresConnection.SessionSetting]

        public init(
            connectionsMax: Int = 8, waitersMax: Int = 2_000, acquireTimeoutSeconds: Double = 5,
            applicationName: String = "notesfs", settings: [PostgresConnection.SessionSetting] = []
        ) {
            self.connectionsMax = connectionsMax
            self.waitersMax = waitersMax
            self.acquireTimeoutSeconds = acquireTimeoutSeconds
            self.applicationName = applicationName
            self.settings = settings
        }
    }

    /// One connection's home: a serial queue and the connection made on it.
    ///
    /// `@unchecked Sendable`: `connection` is read and written only by blocks
    /// running on `queue`, which is serial, and a slot is lent to one caller
    /// at a time by the pool.
    final class Slot: @unchecked Sendable {
        let queue: DispatchQueue
        var connection: PostgresConnection?
        init(index: Int) { queue = DispatchQueue(label: "notesfs.postgres.connection.\(index)") }
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Slot, any Error>
    }

    private struct State {
        var idle: [Slot] = []
        var made = 0
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
        var closed = false
        var all: [Slot] = []
    }

    public let conninfo: String
    public let options: Options
    private let state = Mutex(State())
    private let timers = DispatchQueue(label: "notesfs.postgres.pool-timers")

    public init(conninfo: String, options: Options = Options()) {
        precondition(options.connectionsMax >= 1, "a pool needs at least one connection")
        self.conninfo = conninfo
        self.options = options
    }

    /// Connections made so far (at most `connectionsMax`).
    public var size: Int { state.withLock { $0.made } }
    /// Requests waiting for a connection now.
    public var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Runs `body` with a connection on that connection's queue. Connection
    /// failures arrive as `PostgresError` (`isUnavailable`).
    public func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        let slot = try await acquire()
        defer { release(slot) }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            slot.queue.async { [conninfo, options] in
                continuation.resume(with: Result { try Self.run(body, on: slot, conninfo: conninfo, options: options) })
            }
        }
    }

    /// On the slot's queue: connect when needed, run, drop a broken
    /// connection, and run once more on a fresh one when a connection that
    /// had worked before turned out to be dead.
    private static func run<T>(
        _ body: (PostgresConnection) throws -> T, on slot: Slot, conninfo: String, options: Options
    ) throws -> T {
        var reused = slot.connection != nil
        while true {
            let connection: PostgresConnection
            if let existing = slot.connection {
                connection = existing
            } else {
                connection = try PostgresConnection(
                    conninfo: conninfo, applicationName: options.applicationName, settings: options.settings)
                slot.connection = connection
            }
            do {
                return try body(connection)
            } catch {
                guard connection.isBroken else { throw error }
                slot.connection = nil
                guard reused else { throw error }
                reused = false
            }
        }
    }

    private func acquire() async throws -> Slot {
        enum Decision {
            case slot(Slot)
            case wait
            case fail(PostgresError)
        }
        let decision: Decision = state.withLock { state in
            if state.closed { return .fail(PostgresError(.closed, message: "the server is stopping")) }
            if let slot = state.idle.popLast() { return .slot(slot) }
            if state.made < options.connectionsMax {
                let slot = Slot(index: state.made)
                state.made += 1
                state.all.append(slot)
                return .slot(slot)
            }
            if state.waiters.count >= options.waitersMax {
                return .fail(
                    PostgresError(
                        .poolExhausted,
                        message: "all \(options.connectionsMax) connections are busy and \(options.waitersMax) "
                            + "requests already wait; try again later or raise the pool size"))
            }
            return .wait
        }
        switch decision {
        case .slot(let slot): return slot
        case .fail(let error): throw error
        case .wait: break
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Slot, any Error>) in
            let id: UInt64? = state.withLock { state in
                // A slot may have come back between the two locks.
                if let slot = state.idle.popLast() {
                    continuation.resume(returning: slot)
                    return nil
                }
                state.nextWaiter += 1
                state.waiters.append(Waiter(id: state.nextWaiter, continuation: continuation))
                return state.nextWaiter
            }
            guard let id else { return }
            let timeout = options.acquireTimeoutSeconds
            let size = options.connectionsMax
            timers.asyncAfter(deadline: .now() + timeout) { [self] in
                let waiter: Waiter? = state.withLock { state in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                waiter?.continuation.resume(
                    throwing: PostgresError(
                        .poolExhausted,
                        message: "no connection of \(size) was free within \(timeout) s; the database is slow "
                            + "or the pool too small"))
            }
        }
    }

    private func release(_ slot: Slot) {
        let waiter: Waiter? = state.withLock { state in
            if state.closed { return nil }
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.idle.append(slot)
            return nil
        }
        waiter?.continuation.resume(returning: slot)
    }

    /// Fails waiting and later callers and closes idle connections.
    public func close() {
        let (waiters, slots): ([Waiter], [Slot]) = state.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return (state.waiters, state.all)
        }
        for waiter in waiters {
            waiter.continuation.resume(throwing: PostgresError(.closed, message: "the pool was closed"))
        }
        for slot in slots {
            slot.queue.sync { slot.connection = nil }
        }
    }
}
