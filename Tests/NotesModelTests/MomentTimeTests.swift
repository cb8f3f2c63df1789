import Foundation
import NotesModel
import Testing

@Suite struct MomentTimeTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin") ?? .gmt

    func utc(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        return formatter.date(from: text)
    }

    @Test(arguments: [
        ("2026-12-03T13:10", "2026-12-03T12:10:00Z"),
        ("2026-12-03T13:10:05", "2026-12-03T12:10:05Z"),
        ("2026-12-03", "2026-12-02T23:00:00Z"),
        ("2026-07-01T00:00", "2026-06-30T22:00:00Z"),
        ("2024-02-29T23:59:59", "2024-02-29T22:59:59Z"),
        ("2026-12-03 13:10", "2026-12-03T12:10:00Z"),
    ])
    func aMomentIsReadInTheLocalTimeZone(text: String, expected: String) throws {
        #expect(MomentTime.parse(text, timeZone: Self.berlin) == utc(expected))
    }

    @Test(arguments: [
        "", "2026", "2026-12", "2026-12-3", "2026-12-03T", "2026-12-03T13", "2026-12-03_13:10", "2026-12-03T13:10Z",
        "2026-13-01", "2026-00-10", "2026-02-30", "2025-02-29", "2026-12-32", "2026-12-03T24:00", "2026-12-03T13:60",
        "2026-12-03T13:10:60", "2026-12-03T13:10:5", "2026-12-03t13:10", "20a6-12-03", "1969-12-31", "٢٠٢٦-12-03",
    ])
    func whatIsNotAMomentIsRefused(text: String) {
        #expect(MomentTime.parse(text, timeZone: Self.berlin) == nil)
    }

    @Test func aMomentsNameReadsBackAsTheSameSecond() throws {
        let date = try #require(MomentTime.parse("2026-03-29T01:59:59", timeZone: Self.berlin))
        #expect(MomentTime.name(date, timeZone: Self.berlin) == "2026-03-29T01:59:59")
        #expect(MomentTime.parse(MomentTime.name(date, timeZone: Self.berlin), timeZone: Self.berlin) == date)
        #expect(MomentTime.localText(date, timeZone: Self.berlin) == "2026-03-29 01:59:59")
        #expect(MomentTime.name(date, seconds: false, timeZone: Self.berlin) == "2026-03-29T01:59")
    }

    @Test func aWallTimeSkippedByDaylightSavingIsTheNextTimeTheClockShowed() throws {
        // Clocks in Berlin went from 02:00 to 03:00 on 2026-03-29.
        let skipped = try #require(MomentTime.parse("2026-03-29T02:30", timeZone: Self.berlin))
        #expect(skipped > utc("2026-03-29T00:59:59Z") ?? .distantFuture)
        #expect(skipped <= utc("2026-03-29T01:30:00Z") ?? .distantPast)
    }

    @Test(arguments: [
        ("", "", 0, 0),
        ("a\nb\n", "a\nb\n", 0, 0),
        ("a\nb\n", "a\nx\nb\n", 1, 0),
        ("a\nb\nc\n", "a\nc\n", 0, 1),
        ("old\n", "new\n", 1, 1),
        ("", "one\ntwo\nthree", 3, 0),
        ("a\nb", "a\nb\n", 1, 1),
    ])
    func lineChangesCountAddedAndRemovedLines(old: String, new: String, added: Int, removed: Int) {
        let changes = LineChanges.between(old: Data(old.utf8), new: Data(new.utf8))
        #expect(changes == LineChanges(added: added, removed: removed))
    }
}
