import Foundation

/// A moment named the way people write it, in this machine's time zone:
/// `2026-12-03T13:10`, `2026-12-03T13:10:05` (a space may stand for the
/// `T`), or a date alone `2026-12-03` (its midnight). Used by
/// `.notesfs/at/<moment>/`, `notesfs show PATH@<moment>` and `notesfs revert`.
public enum MomentTime {
    /// How a moment is written, for error messages.
    public static let syntax = "YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS (local time)"

    /// The time `text` names in `timeZone` (default: this machine's), or nil
    /// when it is not one of the accepted forms or names no real time
    /// (month 13, February 30th, 25:00).
    public static func parse(_ text: String, timeZone: TimeZone = .current) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10 || bytes.count == 16 || bytes.count == 19 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), bytes[4] == UInt8(ascii: "-"), let month = number(5..<7),
            bytes[7] == UInt8(ascii: "-"), let day = number(8..<10)
        else { return nil }
        var hour = 0, minute = 0, second = 0
        if bytes.count > 10 {
            guard bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "), let parsedHour = number(11..<13), bytes[13] == UInt8(ascii: ":"),
                let parsedMinute = number(14..<16)
            else { return nil }
            hour = parsedHour
            minute = parsedMinute
            if bytes.count == 19 {
                guard bytes[16] == UInt8(ascii: ":"), let parsedSecond = number(17..<19) else { return nil }
                second = parsedSecond
            }
        }
        guard year >= 1970, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let wanted = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard let date = calendar.date(from: wanted) else { return nil }
        // February 30th rolls over to March 2nd: a day that does not exist is
        // refused. A wall time skipped by a daylight-saving change moves
        // forward past the gap, which is the moment the clock showed next.
        let back = calendar.dateComponents([.year, .month, .day], from: date)
        guard back.year == year, back.month == month, back.day == day else { return nil }
        return date
    }

    /// `date` as `2026-12-03 13:10:05` in `timeZone` (default: this machine's).
    public static func localText(_ date: Date, timeZone: TimeZone = .current) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String {
            let value = value ?? 0
            return value < 10 ? "0\(value)" : "\(value)"
        }
        return "\(parts.year ?? 0)-\(two(parts.month))-\(two(parts.day)) "
            + "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second))"
    }

    /// `date` in the form `parse` reads back, to the second
    /// (`2026-12-03T13:10:05`), or to the minute it falls in.
    public static func name(_ date: Date, seconds: Bool = true, timeZone: TimeZone = .current) -> String {
        let text = localText(date, timeZone: timeZone).replacingOccurrences(of: " ", with: "T")
        return seconds ? text : String(text.dropLast(3))
    }
}
