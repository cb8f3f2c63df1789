import Foundation

/// Ends parked long polls' waits at their deadlines, on one thread of its
/// own (`notesfs.server.longpoll-timers`) that sleeps until the earliest.
///
/// A dispatch timer per poll cost a tenth of the server's CPU in idle
/// long-poll cycles (measured: every `asyncAfter` wakes libdispatch's manager
/// thread, which wakes a worker to run the block). Here a new deadline wakes
/// the thread only when it is the earliest, and one wake-up ends every wait
/// due within `grain`, so a wait may end up to that much early. Deadlines of
/// polls woken before their time stay in the heap until then and end nothing.
/// The thread starts with the first deadline and ends after `idleSeconds`
/// without one.
///
/// `@unchecked Sendable`: `heap`, `running` and `stopped` are guarded by `condition`.
final class WaitDeadlines<Item: Sendable>: @unchecked Sendable {
    private struct Entry {
        let deadline: ContinuousClock.Instant
        let item: Item
    }

    private let condition = NSCondition()
    private var heap: [Entry] = []
    private var running = false
    private var stopped = false
    private let grain: Duration
    private let idleSeconds: Double
    private let label: String
    private let expire: @Sendable ([Item]) -> Void

    /// `expire` gets the items whose deadlines came, on the thread.
    init(
        label: String, grain: Duration = .milliseconds(10), idleSeconds: Double = 5,
        expire: @escaping @Sendable ([Item]) -> Void
    ) {
        self.label = label
        self.grain = grain
        self.idleSeconds = idleSeconds
        self.expire = expire
    }

    /// Entries waiting, those of woken polls included.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return heap.count
    }

    /// Ends `item`'s wait at `deadline` (at once if the deadlines were stopped).
    func add(_ item: Item, at deadline: ContinuousClock.Instant) {
        condition.lock()
        guard !stopped else {
            condition.unlock()
            expire([item])
            return
        }
        let earliest = heap.first?.deadline
        push(Entry(deadline: deadline, item: item))
        if !running {
            running = true
            let thread = Thread { [self] in loop() }
            thread.name = label
            thread.start()
        } else if earliest.map({ deadline < $0 }) ?? true {
            condition.signal()
        }
        condition.unlock()
    }

    /// Ends every wait now and every later one at once.
    func stop() {
        condition.lock()
        stopped = true
        let items = heap.map(\.item)
        heap.removeAll()
        condition.signal()
        condition.unlock()
        if !items.isEmpty { expire(items) }
    }

    private func loop() {
        condition.lock()
        while true {
            guard let first = heap.first else {
                // Idle: end the thread unless a deadline comes soon.
                if stopped || !condition.wait(until: Date().addingTimeInterval(idleSeconds)), heap.isEmpty {
                    running = false
                    condition.unlock()
                    return
                }
                continue
            }
            let now = ContinuousClock.now
            if first.deadline > now + grain {
                // At most a second at a time: the wait is on the wall clock, which may be set back.
                let seconds = min(1, Self.seconds(first.deadline - now))
                _ = condition.wait(until: Date().addingTimeInterval(seconds))
                continue
            }
            var due: [Item] = []
            while let top = heap.first, top.deadline <= now + grain { due.append(pop().item) }
            condition.unlock()
            expire(due)
            condition.lock()
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    // MARK: Binary heap on deadline

    private func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func pop() -> Entry {
        let top = heap[0]
        let last = heap.removeLast()
        guard !heap.isEmpty else { return top }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count && heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
