import Foundation
import Synchronization

/// Sends `NOTIFY`s on one channel from a connection and thread of its own,
/// coalescing: payloads queued while a batch is on its way go together in
/// the next one (`SELECT pg_notify(channel, p) FROM unnest(…)`), duplicates
/// once. The session runs with `synchronous_commit = off`: a notification
/// need not survive a crash, and PostgreSQL holds its global notify lock
/// until the commit is flushed, so waiting for the flush would serialise
/// every sender in the cluster. Callers never block on it.
///
/// A batch that fails is sent once more on a fresh connection; one that
/// fails again (the database is down) is dropped, and so are payloads past
/// `pendingMax`. After a drop, `lostPayload` (when given) goes first in the
/// next batch that is sent, so listeners learn that they missed something;
/// while it is owed the thread tries every `retrySeconds` even when idle.
public final class PostgresNotifier: Sendable {
    private struct State {
        var pending: [String] = []
        var queued = Set<String>()
        var stopping = false
        var finished = false
        /// Payloads were dropped since the last batch sent.
        var lost = false
    }

    /// Distinct payloads waiting at most; beyond it new ones are dropped.
    public static let pendingMax = 10_000

    private let conninfo: String
    private let channel: String
    private let lostPayload: String?
    private let retrySeconds: Double
    private let state = Mutex(State())
    private let condition = NSCondition()

    public init(conninfo: String, channel: String, lostPayload: String? = nil, retrySeconds: Double = 0.5) {
        self.conninfo = conninfo
        self.channel = channel
        self.lostPayload = lostPayload
        self.retrySeconds = retrySeconds
        let thread = Thread { [self] in loop() }
        thread.name = "notesfs.postgres.notifier"
        thread.start()
    }

    /// Queues `payload` for the next batch.
    public func notify(_ payload: String) {
        condition.lock()
        state.withLock { state in
            guard !state.stopping else { return }
            guard state.pending.count < Self.pendingMax else {
                state.lost = true
                return
            }
            guard state.queued.insert(payload).inserted else { return }
            state.pending.append(payload)
        }
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        var connection: PostgresConnection?
        while true {
            condition.lock()
            var batch: [String] = []
            var stopping = false
            while true {
                (batch, stopping) = state.withLock { state in
                    defer {
                        state.pending = []
                        state.queued = []
                        if lostPayload != nil { state.lost = false }
                    }
                    if state.lost, let lostPayload { return ([lostPayload] + state.pending, state.stopping) }
                    return (state.pending, state.stopping)
                }
                if !batch.isEmpty || stopping { break }
                condition.wait()
            }
            condition.unlock()
            if !batch.isEmpty && !send(batch, on: &connection) && !send(batch, on: &connection) {
                if stopping { break }
                state.withLock { $0.lost = true }
                // Owed: try again after a pause, even if nothing new comes.
                if lostPayload != nil { Thread.sleep(forTimeInterval: retrySeconds) }
            }
            if stopping && batch.isEmpty { break }
        }
        connection = nil
        condition.lock()
        state.withLock { $0.finished = true }
        condition.broadcast()
        condition.unlock()
    }

    /// Sends one batch; false when it failed (the connection is dropped when broken).
    private func send(_ batch: [String], on connection: inout PostgresConnection?) -> Bool {
        do {
            if connection == nil {
                let fresh = try PostgresConnection(conninfo: conninfo, applicationName: "notesfs-notifier")
                try fresh.execute("SET synchronous_commit = off")
                connection = fresh
            }
            try connection?.execute(
                "SELECT count(pg_notify($1, payload)) FROM unnest($2::text[]) AS payload", channel,
                Self.arrayLiteral(batch))
            return true
        } catch {
            if connection?.isBroken ?? true { connection = nil }
            return false
        }
    }

    /// A PostgreSQL text[] literal, every element quoted and escaped.
    static func arrayLiteral(_ items: [String]) -> String {
        let quoted = items.map { item in
            // Payloads are ids and numbers: escape only when there is something to escape.
            guard item.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") }) else {
                return "\"" + item + "\""
            }
            return "\"" + item.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                + "\""
        }
        return "{" + quoted.joined(separator: ",") + "}"
    }

    /// Sends what is queued, then ends the thread.
    public func stop() {
        condition.lock()
        state.withLock { $0.stopping = true }
        condition.broadcast()
        while !state.withLock({ $0.finished }) { condition.wait() }
        condition.unlock()
    }
}
