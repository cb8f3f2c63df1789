import Foundation

/// How both stores keep a time: whole milliseconds since 1970, rounded down,
/// in an integer column.
extension ServerStore {
    /// `date` as stored: whole milliseconds since 1970, rounded down.
    package static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The date a stored time stands for.
    package static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
