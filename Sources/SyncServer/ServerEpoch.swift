import Foundation

/// Where a new epoch starts counting. A restored server cannot know which
/// versions its lost history issued, yet clients hold them as bases; a
/// reissued one would let a stale change apply without a merge, and let a
/// client mistake a row written since the restore for one of its ancestors.
///
/// Every account's counter moves to the wall clock in microseconds. Versions
/// are issued one by one from there, far slower than a microsecond each, so
/// counters never run ahead of the clock and every later restore — even of
/// the same backup — starts past every version issued before it. Only a
/// clock behind the restored counter (a wrong clock) falls back to a jump of
/// `minimumGap`. (Adding a gap to the clock instead put counters 71 minutes
/// ahead of it, and two restores of one backup within that time started at
/// the same number: the simulation found it, seed 18069.)
public enum ServerEpoch {
    /// The jump past the restored counter when the clock is not ahead of it.
    public static let minimumGap: Int64 = 1 << 32

    /// A new random epoch: 16 bytes from the system's secure generator, as hex.
    package static func make() -> String { RandomHex.make(bytes: 16) }

    /// The wall clock in microseconds since 1970 (0 for a clock before it).
    /// JSON numbers stay exact up to 2⁵³ µs, in the year 2255.
    public static func clockFloor(now: Date) -> Int64 {
        let seconds = now.timeIntervalSince1970
        guard seconds.isFinite, seconds > 0, seconds < 9e12 else { return 0 }
        return Int64(seconds * 1e6)
    }
}
