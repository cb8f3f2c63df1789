import Foundation
import Synchronization

/// True once `condition` holds, checked every 10 ms; false after `seconds`.
///
/// Tests wait for events, never for a fixed time: the ceiling is generous
/// (30 s unless a test says otherwise) so that only a real failure reaches
/// it, however busy the machine is.
public func waitUntil(_ seconds: Double = 30, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// A count several tasks share (say, of workers still running), for a
/// `waitUntil` elsewhere to watch.
public final class SharedCount: Sendable {
    private let count: Atomic<Int>

    public init(_ value: Int) { count = Atomic(value) }

    public var value: Int { count.load(ordering: .sequentiallyConsistent) }
    public func add(_ amount: Int) { count.add(amount, ordering: .sequentiallyConsistent) }
}

/// Runs blocking work (a child process, a socket, a libpq call) on a thread
/// of its own and returns its result. Swift's cooperative pool has only as
/// many threads as cores: a test that blocks one of them delays every other
/// test in the process.
public func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        blockingThread { continuation.resume(with: Result { try work() }) }
    }
}

/// Runs blocking work on a new thread.
public func blockingThread(_ work: @escaping @Sendable () -> Void) {
    let thread = Thread(block: work)
    thread.stackSize = 1 << 20
    thread.start()
}
