import Foundation

/// Where a new epoch starts counting. A restored server cannot know which
/// versions its lost history issued, yet clients hold them as bases; a
/// reissued one would let a stale change apply without a merge, and let a
/// client mistake a row written since the restore for one of its ancestors.
///
/// Every account's counter moves to `max(counter + minimumGap, clockFloor)`.
/// An epoch would have to issue a million versions a second to reach the
/// clock floor of the next one, so even the same backup restored twice never
/// reissues a version; the gap covers a server whose clock is behind.
public enum ServerEpoch {
    /// The least jump past the restored counter.
    public static let minimumGap: Int64 = 1 << 32

    /// The wall clock in microseconds since 1970 (0 for a clock before it).
    /// JSON numbers stay exact up to 2⁵³ µs, in the year 2255.
    public static func clockFloor(now: Date) -> Int64 {
        let seconds = now.timeIntervalSince1970
        guard seconds.isFinite, seconds > 0, seconds < 9e12 else { return 0 }
        return Int64(seconds * 1e6)
    }
}
