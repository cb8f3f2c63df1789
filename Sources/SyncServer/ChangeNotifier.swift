import Foundation
import Synchronization

/// Parks long polls per account and wakes them when that account commits.
///
/// Use: `arm` a ticket, re-read the feed, and only if it is still empty
/// `wait` on the ticket. A commit between `arm` and `wait` fires the ticket,
/// so `wait` returns at once: no wake-up is ever lost. A waiting poll holds no
/// thread (a continuation); its timeout is a deadline on one shared timer
/// thread (`WaitDeadlines`), and may end up to 10 ms early.
public final class ChangeNotifier: Sendable {
    /// A parked or about-to-park poll.
    public struct Ticket: Sendable, Hashable {
        let id: UInt64
        let account: AccountID
    }

    private enum Slot {
        case armed
        case fired
        case waiting(CheckedContinuation<Bool, Never>)
    }

    private struct State {
        var nextID: UInt64 = 0
        var slots: [AccountID: [UInt64: Slot]] = [:]
        var waitingCount = 0
        var closed = false
    }

    /// The state, in an object of its own so the timer thread reaches it without the notifier.
    private final class Board: Sendable {
        let state = Mutex(State())

        /// Removes `ticket`; the continuation of a wait it ended, if any.
        func remove(_ ticket: Ticket) -> CheckedContinuation<Bool, Never>? {
            state.withLock { state in
                guard let slot = state.slots[ticket.account]?.removeValue(forKey: ticket.id) else { return nil }
                if state.slots[ticket.account]?.isEmpty == true { state.slots[ticket.account] = nil }
                if case .waiting(let continuation) = slot {
                    state.waitingCount -= 1
                    return continuation
                }
                return nil
            }
        }
    }

    private let board: Board
    private let deadlines: WaitDeadlines<Ticket>

    public init() {
        let board = Board()
        self.board = board
        deadlines = WaitDeadlines(label: "notesfs.server.longpoll-timers") { tickets in
            // Ran out: each wait ends as timed out (a ticket already fired or dropped is gone).
            for ticket in tickets { board.remove(ticket)?.resume(returning: false) }
        }
    }

    /// Long polls parked right now.
    public var waitingCount: Int { board.state.withLock { $0.waitingCount } }

    /// True once `close()` ran: waits return at once from then on.
    public var isClosed: Bool { board.state.withLock { $0.closed } }

    /// Registers interest in `account`'s next commit.
    public func arm(_ account: AccountID) -> Ticket {
        board.state.withLock { state in
            state.nextID += 1
            state.slots[account, default: [:]][state.nextID] = state.closed ? .fired : .armed
            return Ticket(id: state.nextID, account: account)
        }
    }

    /// Drops a ticket that will not be waited on (or ends its wait as timed out).
    public func disarm(_ ticket: Ticket) {
        board.remove(ticket)?.resume(returning: false)
    }

    /// Waits until the account commits, `seconds` pass, or the notifier closes.
    /// The ticket is used up either way. True when the ticket fired (a
    /// commit, `notifyAll` or `close`, also one that came before the wait);
    /// false when the wait ran out.
    @discardableResult
    public func wait(_ ticket: Ticket, seconds: Double) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            // nil: parked; otherwise the answer at once.
            let answer: Bool? = board.state.withLock { state in
                switch state.slots[ticket.account]?[ticket.id] {
                case .armed?:
                    state.slots[ticket.account]?[ticket.id] = .waiting(continuation)
                    state.waitingCount += 1
                    return nil
                case .fired?:
                    return true
                case .waiting?, nil:
                    return false
                }
            }
            guard let answer else {
                deadlines.add(ticket, at: .now + .milliseconds(Int64(max(0, seconds) * 1_000)))
                return
            }
            disarm(ticket)
            continuation.resume(returning: answer)
        }
    }

    /// Wakes every poll of `account`.
    public func notify(_ account: AccountID) {
        let continuations: [CheckedContinuation<Bool, Never>] = board.state.withLock { state in
            guard let slots = state.slots[account] else { return [] }
            var woken: [CheckedContinuation<Bool, Never>] = []
            var remaining: [UInt64: Slot] = [:]
            for (id, slot) in slots {
                switch slot {
                case .armed, .fired: remaining[id] = .fired
                case .waiting(let continuation):
                    woken.append(continuation)
                    state.waitingCount -= 1
                }
            }
            state.slots[account] = remaining.isEmpty ? nil : remaining
            return woken
        }
        for continuation in continuations { continuation.resume(returning: true) }
    }

    /// Wakes every parked poll of every account (each then re-checks its
    /// token and parks again if it may).
    public func notifyAll() {
        let accounts: [AccountID] = board.state.withLock { Array($0.slots.keys) }
        for account in accounts { notify(account) }
    }

    /// Wakes every poll and makes later waits return at once (shutdown).
    public func close() {
        let accounts: [AccountID] = board.state.withLock { state in
            state.closed = true
            return Array(state.slots.keys)
        }
        for account in accounts { notify(account) }
    }
}
