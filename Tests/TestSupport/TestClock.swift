@testable import NotesStore
import Synchronization

/// A store clock the test moves by hand.
public final class TestClock: Sendable {
    public let nanoseconds = Mutex<Int64>(1_000_000_000_000)

    public init() {}

    public func advance(seconds: Int64) { nanoseconds.withLock { $0 += seconds * 1_000_000_000 } }
    public func advance(milliseconds: Int64) { nanoseconds.withLock { $0 += milliseconds * 1_000_000 } }
    public var storeClock: StoreClock { StoreClock { [self] in nanoseconds.withLock { $0 } } }
}
