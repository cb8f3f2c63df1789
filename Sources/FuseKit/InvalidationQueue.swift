import Foundation
import Synchronization

/// One thing the kernel may have cached that changed behind its back.
public enum Invalidation: Hashable, Sendable {
    /// Attributes and pages of an inode.
    case inode(UInt64)
    /// The directory entry `name` in directory inode `parent`.
    case entry(parent: UInt64, name: String)
}

/// A bounded queue of kernel cache invalidations, drained by one dedicated
/// thread that holds no store lock.
///
/// The file system enqueues after a change; the thread sends
/// `fuse_lowlevel_notify_inval_*`. Nothing here ever runs inside a FUSE request
/// handler, where a notification can deadlock against the kernel's page locks
/// (DESIGN.md). When the queue is full, further items are dropped and counted:
/// the kernel's caches then expire on their (short) timeouts instead.
public final class InvalidationQueue: Sendable {
    /// At most this many distinct invalidations wait at once.
    public static let pendingMax = 65_536

    private struct State {
        var pending: [Invalidation] = []
        var pendingSet: Set<Invalidation> = []
        var stopped = false
        var connected = false
        var dropped = 0
        var sent = 0
        var inFlight = 0
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let log: MountLog
    private let tick: @Sendable () -> [Invalidation]
    /// How often `tick` runs when nothing else happens.
    static let tickSeconds = 0.5
    /// `NOTESFS_INVALIDATION_DELAY_MS`: fault injection for tests, which hold
    /// each batch this long before sending it, as a busy scheduler can, to
    /// widen the window in which the kernel still holds a pulled note's old size.
    public static let delayVariable = "NOTESFS_INVALIDATION_DELAY_MS"
    private let delaySeconds: Double

    /// `tick` runs about every `tickSeconds` on the sending thread and may add work.
    public init(log: MountLog, delaySeconds: Double = 0, tick: @escaping @Sendable () -> [Invalidation] = { [] }) {
        self.log = log
        self.tick = tick
        self.delaySeconds = delaySeconds
    }

    /// The delay `NOTESFS_INVALIDATION_DELAY_MS` asks for (0 when unset or not a number).
    public static func delayFromEnvironment() -> Double {
        guard let text = ProcessInfo.processInfo.environment[delayVariable], let milliseconds = Double(text),
            milliseconds > 0, milliseconds <= 60_000
        else { return 0 }
        return milliseconds / 1000
    }

    /// Starts the sending thread; `send` performs one notification and
    /// returns 0 or -errno (`Mounter.notify`).
    public func start(sending send: @escaping @Sendable (Invalidation) -> Int32) {
        let thread = Thread { [self] in run(send) }
        thread.name = "notesfs-invalidate"
        thread.start()
    }

    /// Allows sending (the kernel connection is initialised).
    public func markConnected() {
        state.withLock { $0.connected = true }
        wakeup.signal()
    }

    /// Queues invalidations; duplicates of waiting items are merged.
    public func enqueue(_ items: [Invalidation]) {
        guard !items.isEmpty else { return }
        let added = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            var added = false
            for item in items where !state.pendingSet.contains(item) {
                guard state.pending.count < Self.pendingMax else {
                    state.dropped += 1
                    continue
                }
                state.pending.append(item)
                state.pendingSet.insert(item)
                added = true
            }
            return added
        }
        if added { wakeup.signal() }
    }

    /// Takes every waiting invalidation without sending it: for an owner that
    /// never started the thread and delivers them itself (a kernel stand-in).
    public func takePending() -> [Invalidation] {
        state.withLock { state in
            let batch = state.pending
            state.pending.removeAll(keepingCapacity: true)
            state.pendingSet.removeAll(keepingCapacity: true)
            return batch
        }
    }

    /// Blocks until every queued invalidation was sent (for tests and orderly shutdown).
    public func waitUntilIdle(timeoutSeconds: Double = 5) {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            let idle = state.withLock { ($0.pending.isEmpty && $0.inFlight == 0) || $0.stopped || !$0.connected }
            if idle { return }
            usleep(2_000)
        }
    }

    /// Stops the thread; waiting items are discarded.
    public func stop() {
        let wasRunning = state.withLock { state -> Bool in
            let was = !state.stopped
            state.stopped = true
            return was
        }
        guard wasRunning else { return }
        wakeup.signal()
        _ = finished.wait(timeout: .now() + 5)
    }

    public var counters: (sent: Int, dropped: Int) { state.withLock { ($0.sent, $0.dropped) } }

    private func run(_ send: @Sendable (Invalidation) -> Int32) {
        defer { finished.signal() }
        while true {
            if wakeup.wait(timeout: .now() + Self.tickSeconds) == .timedOut {
                let connected = state.withLock { $0.connected && !$0.stopped }
                if connected { enqueue(tick()) }
            }
            while true {
                let batch = state.withLock { state -> [Invalidation]? in
                    if state.stopped { return nil }
                    guard state.connected, !state.pending.isEmpty else { return [] }
                    let batch = state.pending
                    state.pending.removeAll(keepingCapacity: true)
                    state.pendingSet.removeAll(keepingCapacity: true)
                    state.inFlight = batch.count
                    return batch
                }
                guard let batch else { return }
                if batch.isEmpty { break }
                if delaySeconds > 0 { Thread.sleep(forTimeInterval: delaySeconds) }
                for item in batch {
                    let result = send(item)
                    if result != 0 && result != -ENOENT {
                        log.warning("invalidation \(item) failed: errno \(-result)")
                    }
                }
                state.withLock {
                    $0.inFlight = 0
                    $0.sent += batch.count
                }
            }
        }
    }
}
