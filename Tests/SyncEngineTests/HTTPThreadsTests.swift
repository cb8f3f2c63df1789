import Foundation
import Synchronization
import Testing

@testable import SyncEngine

/// The bounded threads HTTP requests run on: never more than the bound, and
/// every request runs, in order, once a thread is free.
@Suite struct HTTPThreadsTests {
    @Test func requestsBeyondTheBoundWaitForAFreeThreadAndAllRun() {
        let threads = HTTPThreads(threadsMax: 3)
        let release = DispatchSemaphore(value: 0)
        let started = Mutex<[Int]>([])
        let finished = DispatchSemaphore(value: 0)
        for index in 0..<10 {
            threads.run {
                started.withLock { $0.append(index) }
                release.wait()
                finished.signal()
            }
        }
        // Three run and block; the other seven wait in order.
        #expect(Self.waitUntil { started.withLock { $0.count } == 3 })
        Thread.sleep(forTimeInterval: 0.05)
        #expect(started.withLock { $0 }.sorted() == [0, 1, 2], "no fourth request runs while three threads are busy")
        for _ in 0..<10 { release.signal() }
        for _ in 0..<10 { #expect(finished.wait(timeout: .now() + 30) == .success) }
        #expect(started.withLock { $0 }.sorted() == Array(0..<10))
        #expect(threads.threadsStarted == 3)
    }

    @Test func anIdleThreadTakesTheNextRequestInsteadOfANewOne() {
        let threads = HTTPThreads(threadsMax: 8)
        for _ in 0..<20 {
            let done = DispatchSemaphore(value: 0)
            threads.run { done.signal() }
            #expect(done.wait(timeout: .now() + 30) == .success)
            #expect(Self.waitUntil { threads.threadsIdle == 1 })
        }
        #expect(threads.threadsStarted == 1, "one request at a time needs one thread")
    }

    static func waitUntil(seconds: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(2_000)
        }
        return condition()
    }
}
