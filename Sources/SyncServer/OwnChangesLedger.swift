import NotesModel
import Synchronization

/// Remembers, per account and device, a stretch of the feed that only that
/// device's own pushes made, so the device's long poll is not woken to carry
/// its own changes back (it already has them: the push reply's `nextCursor`
/// moved its cursor past them).
///
/// A stretch is recorded only for a push that found the head exactly at the
/// pusher's cursor (`caughtUp`), so every version in `(from, to]` is that
/// device's. It lives in this process's memory: a push served by another
/// process simply wakes the poll as before. Forgetting is always safe; only
/// skipping too much would not be, hence the epoch and head checks in `skip`.
final class OwnChangesLedger: Sendable {
    private struct Key: Hashable {
        var account: AccountID
        var device: DeviceID
    }

    private struct Stretch {
        var epoch: String
        var from: Int64
        var to: Int64
    }

    /// Devices remembered at once; past it the ledger starts afresh.
    static let devicesMax = 100_000

    private let stretches = Mutex<[Key: Stretch]>([:])

    /// Records that `device`'s push took the feed from `from` to `to` with nothing else in between.
    func record(account: AccountID, device: DeviceID, epoch: String, from: Int64, to: Int64) {
        guard to > from else { return }
        let key = Key(account: account, device: device)
        stretches.withLock { stretches in
            if let known = stretches[key], known.epoch == epoch, from >= known.from, from <= known.to {
                // Back to back with the last one (the device pushed from where that left it).
                stretches[key] = Stretch(epoch: epoch, from: known.from, to: to)
                return
            }
            if stretches.count >= Self.devicesMax { stretches.removeAll() }
            stretches[key] = Stretch(epoch: epoch, from: from, to: to)
        }
    }

    /// Where a poll of `device` that stands at `after` may continue from
    /// instead: the end of a recorded stretch holding `after`, when that end
    /// is in this epoch and not past the feed's `head`. Nil when there is none.
    func skip(account: AccountID, device: DeviceID, epoch: String, after: Int64, head: Int64) -> Int64? {
        stretches.withLock { stretches in
            guard let stretch = stretches[Key(account: account, device: device)], stretch.epoch == epoch,
                stretch.from <= after, after < stretch.to, stretch.to <= head
            else { return nil }
            return stretch.to
        }
    }
}
