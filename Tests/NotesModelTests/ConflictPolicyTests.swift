import Foundation
import NotesModel
import Testing
import TestSupport

@Suite struct ConflictPolicyTests {
    static let work = FolderID(name: "work")
    static let home = FolderID(name: "home")
    static let attic = FolderID(name: "attic")

    static func note(_ title: String, _ body: String, _ folder: FolderID? = nil) -> NoteContent {
        NoteContent(title: title, body: Data(body.utf8), folderID: folder)
    }

    static let base = note("plan.md", "1\n2\n3\n4\n5\n", work)

    @Test(arguments: [
        // (local title, remote title, merged title)
        ("plan.md", "plan.md", "plan.md"),
        ("local.md", "plan.md", "local.md"),
        ("plan.md", "remote.md", "remote.md"),
        ("local.md", "remote.md", "remote.md"),
        ("same.md", "same.md", "same.md"),
    ])
    func theSideThatChangedTheTitleWins(local: String, remote: String, expected: String) {
        let outcome = ConflictPolicy.mergeNote(
            base: Self.base, local: Self.note(local, "1\nX\n3\n4\n5\n", Self.work),
            remote: Self.note(remote, "1\n2\n3\nY\n5\n", Self.work))
        #expect(outcome.result == Self.note(expected, "1\nX\n3\nY\n5\n", Self.work))
        #expect(outcome.conflictCopy == nil)
    }

    @Test(
        arguments: [
            (work, work, work),
            (home, work, home),
            (work, home, home),
            (home, attic, attic),
            (nil, work, nil),
            (work, nil, nil),
        ] as [(FolderID?, FolderID?, FolderID?)])
    func theSideThatChangedTheFolderWins(local: FolderID?, remote: FolderID?, expected: FolderID?) {
        let outcome = ConflictPolicy.mergeNote(
            base: Self.base, local: Self.note("plan.md", "1\nX\n3\n4\n5\n", local),
            remote: Self.note("plan.md", "1\n2\n3\nY\n5\n", remote))
        #expect(outcome.result?.folderID == expected)
    }

    @Test func aRenameBetweenComposedAndDecomposedFormsIsAChange() {
        let base = Self.note("Caf\u{E9}.md", "a\n")
        let outcome = ConflictPolicy.mergeNote(
            base: base, local: Self.note("Cafe\u{301}.md", "a\n"), remote: Self.note("Caf\u{E9}.md", "a\nb\n"))
        #expect(outcome.result.map { Array($0.title.utf8) } == Array("Cafe\u{301}.md".utf8))
    }

    @Test func clashingBodiesKeepTheServerTextAndALocalConflictCopy() {
        let local = Self.note("local.md", "1\nmine\n3\n4\n5\n", Self.home)
        let remote = Self.note("plan.md", "1\ntheirs\n3\n4\n5\n", Self.work)
        let outcome = ConflictPolicy.mergeNote(base: Self.base, local: local, remote: remote)
        // Only this side renamed and moved, so the note takes that; the text is the server's.
        #expect(outcome.result == Self.note("local.md", "1\ntheirs\n3\n4\n5\n", Self.home))
        #expect(outcome.conflictCopy == local)
    }

    @Test func equalSidesMakeNoConflictCopy() {
        let same = Self.note("x.md", "new text\n", Self.home)
        let outcome = ConflictPolicy.mergeNote(base: Self.base, local: same, remote: same)
        #expect(outcome == NoteMergeOutcome(result: same, conflictCopy: nil))
    }

    @Test func twoNotesCreatedApartWithoutABaseMergeOrClash() {
        let same = ConflictPolicy.mergeNote(base: nil, local: Self.note("a", "x\n"), remote: Self.note("b", "x\n"))
        #expect(same == NoteMergeOutcome(result: Self.note("b", "x\n")))
        let clash = ConflictPolicy.mergeNote(base: nil, local: Self.note("a", "x\n"), remote: Self.note("b", "y\n"))
        #expect(clash == NoteMergeOutcome(result: Self.note("b", "y\n"), conflictCopy: Self.note("a", "x\n")))
    }

    static let edited = note("plan.md", "1\n2\n3\n4\n5\nmore\n", work)

    @Test(
        arguments: [
            // (base, local, remote, result): an edit beats a delete, both ways.
            (base, edited, nil, edited),
            (base, base, nil, nil),
            (base, nil, edited, edited),
            (base, nil, base, nil),
            (base, nil, nil, nil),
            (nil, edited, nil, edited),
            (nil, nil, edited, edited),
            (nil, nil, nil, nil),
        ] as [(NoteContent?, NoteContent?, NoteContent?, NoteContent?)])
    func anEditBeatsADelete(base: NoteContent?, local: NoteContent?, remote: NoteContent?, expected: NoteContent?) {
        let outcome = ConflictPolicy.mergeNote(base: base, local: local, remote: remote)
        #expect(outcome == NoteMergeOutcome(result: expected, conflictCopy: nil))
    }

    static let folderBase = FolderContent(name: "Work", parentID: nil)

    @Test(
        arguments: [
            (
                folderBase, FolderContent(name: "Job", parentID: nil), FolderContent(name: "Work", parentID: home),
                FolderContent(name: "Job", parentID: home)
            ),
            (
                folderBase, FolderContent(name: "Job", parentID: nil), FolderContent(name: "Office", parentID: nil),
                FolderContent(name: "Office", parentID: nil)
            ),
            (
                folderBase, folderBase, FolderContent(name: "Work", parentID: attic),
                FolderContent(name: "Work", parentID: attic)
            ),
            (folderBase, FolderContent(name: "Job", parentID: nil), nil, FolderContent(name: "Job", parentID: nil)),
            (folderBase, folderBase, nil, nil),
            (folderBase, nil, FolderContent(name: "Job", parentID: nil), FolderContent(name: "Job", parentID: nil)),
            (folderBase, nil, folderBase, nil),
            (folderBase, nil, nil, nil),
            (
                nil, FolderContent(name: "A", parentID: nil), FolderContent(name: "B", parentID: nil),
                FolderContent(name: "B", parentID: nil)
            ),
        ] as [(FolderContent?, FolderContent?, FolderContent?, FolderContent?)])
    func foldersMergeByTheSameRules(
        base: FolderContent?, local: FolderContent?, remote: FolderContent?, expected: FolderContent?
    ) {
        #expect(ConflictPolicy.mergeFolder(base: base, local: local, remote: remote) == expected)
    }

    static func date(_ text: String) -> Date {
        ISO8601DateFormatter().date(from: text) ?? .distantPast
    }

    @Test(arguments: [
        ("todo.md", "laptop", "2024-03-05T23:59:59Z", "todo (conflicted copy laptop 2024-03-05).md"),
        ("todo.md", "laptop", "2024-03-06T00:00:00Z", "todo (conflicted copy laptop 2024-03-06).md"),
        ("todo.md", "laptop", "2024-03-06T00:30:00+01:00", "todo (conflicted copy laptop 2024-03-05).md"),
        ("archive.tar.gz", "pc", "2024-02-29T12:00:00Z", "archive.tar (conflicted copy pc 2024-02-29).gz"),
        (".bashrc", "pc", "1970-01-01T00:00:00Z", ".bashrc (conflicted copy pc 1970-01-01)"),
        ("", "pc", "1969-12-31T23:59:59Z", "Untitled (conflicted copy pc 1969-12-31)"),
        ("Plan", "pc", "2000-02-29T00:00:00Z", "Plan (conflicted copy pc 2000-02-29)"),
    ])
    func conflictCopiesAreNamedAfterDeviceAndDay(title: String, device: String, date: String, expected: String) {
        #expect(ConflictPolicy.conflictCopyTitle(for: title, device: device, date: Self.date(date)) == expected)
    }

    @Test func conflictCopyDaysAgreeWithTheCalendar() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        for seed in Seeds.list(count: 1_000) {
            var random = SplitMix64(seed: seed)
            let date = Date(timeIntervalSince1970: Double(random.int(-5_000_000_000..<10_000_000_000)))
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            let title = ConflictPolicy.conflictCopyTitle(for: "n", device: "d", date: date)
            let day = try #require(
                parts.year.flatMap { year in parts.month.flatMap { month in parts.day.map { (year, month, $0) } } })
            let expected = String(format: "n (conflicted copy d %04d-%02d-%02d)", day.0, day.1, day.2)
            #expect(title == expected, "seed \(seed)")
        }
    }

    @Test func conflictCopyTitlesStayWithinTheLimit() {
        let title = String(repeating: "ä", count: 200) + ".md"
        let device = String(repeating: "host-", count: 40)
        for date in [Date(timeIntervalSince1970: 0), .distantFuture, .distantPast] {
            let copy = ConflictPolicy.conflictCopyTitle(for: title, device: device, date: date)
            #expect(copy.utf8.count <= 255)
            #expect(copy.hasPrefix("ää"))
            #expect(copy.hasSuffix(").md"))
            #expect(NameCodec.isValidFileName(copy))
        }
    }

    @Test func eachNoteHasOneConflictCopyIDPerDevice() {
        let (note, device) = (NoteID(), DeviceID())
        let copy = ConflictPolicy.conflictCopyID(of: note, device: device)
        #expect(copy == ConflictPolicy.conflictCopyID(of: note, device: device))
        #expect(copy != ConflictPolicy.conflictCopyID(of: NoteID(), device: device))
        #expect(copy != ConflictPolicy.conflictCopyID(of: note, device: DeviceID()))
        #expect(copy != note)
        // Pinned: every version must find the copy an earlier one made.
        let pinnedNote = NoteID(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))
        let pinnedDevice = DeviceID(UUID(uuid: (16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)))
        #expect(
            ConflictPolicy.conflictCopyID(of: pinnedNote, device: pinnedDevice).description
                == "d0301aa0-80a0-8353-ba42-00a23dfa8e43")
    }

    @Test(arguments: [
        ("todo (conflicted copy laptop 2024-03-05).md", "todo.md"),
        ("archive.tar (conflicted copy pc 2024-02-29).gz", "archive.tar.gz"),
        (".bashrc (conflicted copy pc 1970-01-01)", ".bashrc"),
        ("Plan (conflicted copy my (old) pc 2000-02-29)", "Plan"),
        ("a (conflicted copy x 2000-01-01) (conflicted copy y 2000-01-02).md", "a (conflicted copy x 2000-01-01).md"),
        ("todo.md", nil),
        ("todo (conflicted copy laptop).md", nil),
    ] as [(String, String?)])
    func aConflictCopysTitleNamesItsNote(copy: String, original: String?) {
        #expect(ConflictPolicy.originalTitle(ofConflictCopy: copy) == original)
        #expect(ConflictPolicy.looksLikeConflictCopy(copy) == copy.contains(" (conflicted copy "))
    }

    @Test(arguments: [
        // (old copy, new clash, updated copy): every line of both, shared lines once.
        ("1\nmine\n3\n", "1\nmine again\n3\n", "1\nmine\nmine again\n3\n"),
        ("a\nb\n", "a\nb\nc\n", "a\nb\nc\n"),
        ("a\nb\nc\n", "a\nc\n", "a\nb\nc\n"),
        ("x\n", "y\n", "x\ny\n"),
        ("", "y\n", "y\n"),
        ("a\r\nb", "a\r\nc", "a\r\nb\r\nc"),
    ])
    func aFurtherClashKeepsEveryLineOfTheCopy(old: String, new: String, expected: String) {
        let updated = ConflictPolicy.updatedConflictCopy(old: Data(old.utf8), new: Data(new.utf8))
        #expect(String(decoding: updated, as: UTF8.self) == expected)
    }

    @Test(arguments: [
        ("todo.md", "todo (not synced).md"),
        ("archive.tar.gz", "archive.tar (not synced).gz"),
        ("README", "README (not synced)"),
        ("", "Untitled (not synced)"),
    ])
    func refusedTextIsKeptUnderANotSyncedTitle(title: String, expected: String) {
        #expect(ConflictPolicy.notSyncedTitle(for: title) == expected)
    }

    @Test func notSyncedTitlesStayWithinTheLimit() {
        let title = ConflictPolicy.notSyncedTitle(for: String(repeating: "x", count: 10_000) + ".md")
        #expect(title.utf8.count <= 255)
        #expect(title.hasSuffix("x (not synced).md"))
    }
}

@Suite struct MergeWithoutBaseTests {
    func note(_ body: String) -> NoteContent { NoteContent(title: "n.md", body: Data(body.utf8), folderID: nil) }

    @Test func aSideHoldingEveryLineOfTheOtherWinsWithoutACopy() {
        let outcome = ConflictPolicy.mergeNote(base: nil, local: note("old\nedited later\n"), remote: note("old\n"))
        #expect(outcome.result == note("old\nedited later\n"))
        #expect(outcome.conflictCopy == nil)
        let other = ConflictPolicy.mergeNote(base: nil, local: note("a\nc"), remote: note("a\nb\nc\n"))
        #expect(other.result == note("a\nb\nc\n"))
        #expect(other.conflictCopy == nil)
    }

    @Test func differentTextsWithoutABaseKeepBoth() {
        let outcome = ConflictPolicy.mergeNote(base: nil, local: note("mine\n"), remote: note("theirs\n"))
        #expect(outcome.result == note("theirs\n"))
        #expect(outcome.conflictCopy == note("mine\n"))
    }

    @Test(arguments: [("", "x\n", true), ("a\nb\n", "a\nx\nb\n", true), ("b\na\n", "a\nb\n", false), ("a\n", "", false)])
    func containmentFollowsLineOrder(part: String, whole: String, expected: Bool) {
        #expect(TextMerge.containsEveryLine(of: Data(part.utf8), in: Data(whole.utf8)) == expected)
    }
}
