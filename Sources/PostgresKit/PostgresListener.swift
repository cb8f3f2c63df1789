import Foundation
import Synchronization

/// `LISTEN`s on one channel on a connection of its own, on a thread of its
/// own, and hands each notification to `handler`. Each time it has begun
/// listening, the first time too, it calls `handler` with nil: from then on
/// nothing is missed, and notifications sent before (or while the connection
/// was lost, when it connects again every `reconnectSeconds`) may have been.
/// `stop()` wakes the thread through a pipe and waits for it to end.
public final class PostgresListener: Sendable {
    private let conninfo: String
    private let channel: String
    private let reconnectSeconds: Double
    private let handler: @Sendable (PostgresConnection.Notification?) -> Void
    private let stopping = Atomic<Bool>(false)
    private let listening = Atomic<Bool>(false)
    private let wakePipe: (read: Int32, write: Int32)
    private let finished = DispatchSemaphore(value: 0)

    public init(
        conninfo: String, channel: String, reconnectSeconds: Double = 0.5,
        handler: @escaping @Sendable (PostgresConnection.Notification?) -> Void
    ) throws(PostgresError) {
        self.conninfo = conninfo
        self.channel = channel
        self.reconnectSeconds = reconnectSeconds
        self.handler = handler
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw PostgresError(.connection, message: "cannot make a pipe: errno \(errno)") }
        wakePipe = (fds[0], fds[1])
        let thread = Thread { [self] in loop() }
        thread.name = "notesfs.postgres.listener"
        thread.start()
    }

    private func loop() {
        var connection: PostgresConnection?
        while !stopping.load(ordering: .acquiring) {
            if connection == nil {
                do {
                    // Keepalives: a listener that only reads would not notice its server's host dying.
                    let fresh = try PostgresConnection(
                        conninfo: conninfo, applicationName: "notesfs-listener", keepaliveIdleSeconds: 10)
                    try fresh.executeScript("LISTEN \(try fresh.quoteIdentifier(channel))")
                    connection = fresh
                    handler(nil)
                    listening.store(true, ordering: .releasing)
                } catch {
                    sleepOrWake(seconds: reconnectSeconds)
                    continue
                }
            }
            guard let current = connection else { continue }
            do {
                switch try current.waitForNotifications(timeoutMilliseconds: 1_000, wakeFD: wakePipe.read) {
                case .notifications(let found): found.forEach { handler($0) }
                case .timedOut, .woken: break
                }
            } catch {
                listening.store(false, ordering: .releasing)
                connection = nil
            }
        }
        listening.store(false, ordering: .releasing)
        connection = nil
        finished.signal()
    }

    /// True while the connection listens and has not failed since `handler(nil)`
    /// said so: every notification sent meanwhile reaches `handler`.
    public var isListening: Bool { listening.load(ordering: .acquiring) }

    private func sleepOrWake(seconds: Double) {
        var fd = pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)
        _ = poll(&fd, 1, Int32(seconds * 1000))
    }

    /// Stops listening and waits for the thread to end.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
        finished.wait()
        close(wakePipe.read)
        close(wakePipe.write)
    }
}
