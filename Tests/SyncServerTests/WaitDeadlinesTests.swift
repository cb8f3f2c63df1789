import Synchronization
import Testing
import TestSupport

@testable import SyncServer

/// The long-poll timer thread ends each wait at its deadline, earliest first,
/// whatever order the deadlines came in.
@Suite struct WaitDeadlinesTests {
    @Test func waitsEndInTheOrderOfTheirDeadlinesAndAnEarlierOneWakesTheSleepingThread() async throws {
        let ended = Mutex<[String]>([])
        let deadlines = WaitDeadlines<String>(label: "test-deadlines", grain: .zero) { items in
            ended.withLock { $0 += items }
        }
        let now = ContinuousClock.now
        deadlines.add("late", at: now + .seconds(60))
        // The thread now sleeps toward the late one; these must still end
        // first. A second apart, so a stalled test thread cannot add one
        // after an earlier one is due.
        deadlines.add("third", at: now + .seconds(3))
        deadlines.add("first", at: now + .seconds(1))
        deadlines.add("second", at: now + .seconds(2))
        #expect(try await waitUntil { ended.withLock { $0.count } == 3 })
        #expect(ended.withLock { $0 } == ["first", "second", "third"])
        deadlines.stop()
        #expect(ended.withLock { $0 } == ["first", "second", "third", "late"], "stop ends every wait at once")
        deadlines.add("after stop", at: now + .seconds(60))
        #expect(ended.withLock { $0.last } == "after stop")
    }
}
