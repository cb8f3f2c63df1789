import Foundation
import Synchronization

/// The threads every HTTP request of this process runs on: libcurl's easy
/// interface blocks for a whole transfer, so each request needs a thread of
/// its own, never one of the cooperative pool's. Threads start as requests
/// need them, up to `threadsMax`, and then wait for the next request; past
/// that, requests queue in order. A mount runs at most a long poll, a sync
/// run and a few history reads at once, so the bound is never what it waits on.
final class HTTPThreads: Sendable {
    static let shared = HTTPThreads(threadsMax: 8)

    let threadsMax: Int
    private struct State {
        var queue: [@Sendable () -> Void] = []
        var threads = 0
        var idle = 0
    }

    private let state = Mutex(State())
    private let work = DispatchSemaphore(value: 0)

    init(threadsMax: Int) {
        self.threadsMax = max(1, threadsMax)
    }

    /// How many threads were started so far (never more than `threadsMax`).
    var threadsStarted: Int { state.withLock { $0.threads } }
    /// How many started threads wait for a request.
    var threadsIdle: Int { state.withLock { $0.idle } }

    /// Runs `job` on one of the threads, as soon as one is free.
    func run(_ job: @escaping @Sendable () -> Void) {
        enum Wake { case idleThread, newThread, none }
        let wake = state.withLock { state -> Wake in
            state.queue.append(job)
            if state.idle > 0 {
                state.idle -= 1
                return .idleThread
            }
            guard state.threads < threadsMax else { return .none }  // a busy thread takes it next
            state.threads += 1
            return .newThread
        }
        switch wake {
        case .idleThread:
            work.signal()
        case .newThread:
            let thread = Thread { [self] in serve() }
            thread.name = "notesfs-http"
            thread.start()
        case .none:
            break
        }
    }

    private func serve() {
        while true {
            // Finding the queue empty and counting itself idle is one step, so
            // a job queued in between always finds an idle thread to wake.
            let job = state.withLock { state -> (@Sendable () -> Void)? in
                if state.queue.isEmpty {
                    state.idle += 1
                    return nil
                }
                return state.queue.removeFirst()
            }
            if let job {
                job()
            } else {
                work.wait()
            }
        }
    }
}
