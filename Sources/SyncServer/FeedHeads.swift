import Foundation
import Synchronization

/// Each account's feed head (its counter) as this process knows it for
/// certain, so a poll standing at the head is answered, and parked, without
/// reading the store.
///
/// Certain means: the value was read from the store, and since that read
/// began the store has reported no commit to the account and no moment when
/// it may have missed one (`StoreCommit`). A read records its head only if
/// nothing was reported since it began (`begin`/`record`), so a read that
/// raced a commit never stores the older value. Knowledge also expires after
/// `trustSeconds`, a backstop for a commit nobody reported (a process killed
/// between its commit and its notification): such a change reaches polls at
/// most that much later, never never.
///
/// Off until `follow`: a store that does not report every commit made
/// elsewhere leaves every poll to read the store.
final class FeedHeads: Sendable {
    /// What `begin` hands to `record`: the entry's stamp when the read began.
    struct Stamp: Sendable {
        fileprivate let account: AccountID
        fileprivate let value: UInt64
    }

    private struct Entry {
        var stamp: UInt64
        var counter: Int64?
        var epoch: String
        var loadedAt: ContinuousClock.Instant
    }

    /// Asks the store whether it hears every commit right now.
    private struct Certainty: Sendable {
        let check: @Sendable () -> Bool
    }

    private struct State {
        var certainty: Certainty?
        var nextStamp: UInt64 = 0
        var entries: [AccountID: Entry] = [:]
    }

    /// Accounts remembered at once; past it the table starts afresh.
    static let entriesMax = 100_000

    private let state = Mutex(State())
    private let trust: Duration

    init(trustSeconds: Double) {
        trust = .milliseconds(Int64(trustSeconds * 1_000))
    }

    /// Whether heads are kept at all.
    var isFollowing: Bool { state.withLock { $0.certainty != nil } }

    /// Starts keeping heads; call once the store reports every commit.
    /// `hearsEveryCommit` is asked before each use of a kept head.
    func follow(_ hearsEveryCommit: @escaping @Sendable () -> Bool) {
        state.withLock { $0.certainty = Certainty(check: hearsEveryCommit) }
    }

    /// The head of `account` in `epoch`, when known for certain.
    func known(_ account: AccountID, epoch: String, now: ContinuousClock.Instant = .now) -> Int64? {
        let (counter, certainty): (Int64?, Certainty?) = state.withLock { state in
            guard let certainty = state.certainty, let entry = state.entries[account], let counter = entry.counter,
                entry.epoch == epoch, now - entry.loadedAt < trust
            else { return (nil, nil) }
            return (counter, certainty)
        }
        guard let counter, let certainty, certainty.check() else { return nil }
        return counter
    }

    /// Call before a read of `account`'s feed whose head `record` may keep.
    func begin(_ account: AccountID) -> Stamp? {
        state.withLock { state in
            guard state.certainty != nil else { return nil }
            if let entry = state.entries[account] { return Stamp(account: account, value: entry.stamp) }
            if state.entries.count >= Self.entriesMax { state.entries.removeAll() }
            state.nextStamp += 1
            state.entries[account] = Entry(stamp: state.nextStamp, counter: nil, epoch: "", loadedAt: .now)
            return Stamp(account: account, value: state.nextStamp)
        }
    }

    /// Keeps `counter`, read in `epoch` by a read that began with `stamp`,
    /// unless a commit was reported since (then the next read learns it).
    func record(_ stamp: Stamp?, counter: Int64, epoch: String, now: ContinuousClock.Instant = .now) {
        guard let stamp else { return }
        state.withLock { state in
            guard var entry = state.entries[stamp.account], entry.stamp == stamp.value else { return }
            // Counters only grow within an epoch: never step back to an older read's value.
            if let known = entry.counter, entry.epoch == epoch, known > counter { return }
            entry.counter = counter
            entry.epoch = epoch
            entry.loadedAt = now
            state.entries[stamp.account] = entry
        }
    }

    /// A commit to `account` was made or reported: its head is unknown until read again.
    func forget(_ account: AccountID) {
        state.withLock { state in
            guard state.entries[account] != nil else { return }
            state.nextStamp += 1
            state.entries[account]?.stamp = state.nextStamp
            state.entries[account]?.counter = nil
        }
    }

    /// Commits may have been missed: every head is unknown until read again.
    func forgetAll() {
        state.withLock { $0.entries.removeAll() }
    }
}
