import Foundation

/// How a conflict between this machine and the server settles (DESIGN.md "Sync
/// engine rules"). Pure, so every machine decides the same way; never loses text.
public enum ConflictPolicy {
    /// The namespace of conflict-copy ids (a fixed, random UUID).
    static let conflictCopyNamespace = UUID(
        uuid: (
            0x2F, 0x2D, 0xD8, 0x23, 0x73, 0x60, 0x46, 0x33, 0x81, 0xCD, 0xB8, 0x90, 0x4D, 0xB6, 0x64, 0x39
        ))

    /// The device name in a conflict copy's title is cut to this many bytes, so the
    /// title keeps room for the note's own name.
    public static let deviceNameBytesMax = 64

    /// DESIGN.md rules. nil means deleted/absent on that side (base nil = never synced).
    /// Title and folder: the side that changed wins; both changed -> remote's value. Body:
    /// TextMerge; clash -> remote's body in result, local content as conflictCopy. Edit beats
    /// delete both ways. Both deleted -> nil. Equal sides -> no conflict copy.
    public static func mergeNote(base: NoteContent?, local: NoteContent?, remote: NoteContent?) -> NoteMergeOutcome {
        switch (local, remote) {
        case (nil, nil):
            return NoteMergeOutcome(result: nil)
        case (let local?, nil):
            // Deleted on the server: our edit brings the note back; untouched, it goes.
            return NoteMergeOutcome(result: local == base ? nil : local)
        case (nil, let remote?):
            // Deleted here: an edit on the server keeps the note; untouched, it goes.
            return NoteMergeOutcome(result: remote == base ? nil : remote)
        case (let local?, let remote?):
            if local == remote { return NoteMergeOutcome(result: remote) }
            let title = sideThatChanged(base: base.map(\.title), local: local.title, remote: remote.title)
            let folderID = sideThatChanged(base: base.map(\.folderID), local: local.folderID, remote: remote.folderID)
            if base == nil {
                // No common ancestor is known (a server restored from a backup):
                // a side holding every line of the other, in order, loses nothing
                // by winning; anything else keeps both.
                if TextMerge.containsEveryLine(of: remote.body, in: local.body) {
                    return NoteMergeOutcome(result: NoteContent(title: title, body: local.body, folderID: folderID))
                }
                if TextMerge.containsEveryLine(of: local.body, in: remote.body) {
                    return NoteMergeOutcome(result: NoteContent(title: title, body: remote.body, folderID: folderID))
                }
                // Without a base every line would count as inserted at one
                // point, and keeping both would repeat the lines they share.
                return NoteMergeOutcome(
                    result: NoteContent(title: title, body: remote.body, folderID: folderID), conflictCopy: local)
            }
            switch TextMerge.merge(base: base?.body ?? Data(), local: local.body, remote: remote.body) {
            case .merged(let body):
                return NoteMergeOutcome(result: NoteContent(title: title, body: body, folderID: folderID))
            case .clash:
                return NoteMergeOutcome(
                    result: NoteContent(title: title, body: remote.body, folderID: folderID), conflictCopy: local)
            }
        }
    }

    /// Folders: name and parent by the same side-that-changed rule; edit beats delete;
    /// nil = stays deleted. A merged parent may still make a cycle; the server refuses it.
    public static func mergeFolder(base: FolderContent?, local: FolderContent?, remote: FolderContent?)
        -> FolderContent?
    {
        switch (local, remote) {
        case (nil, nil):
            return nil
        case (let local?, nil):
            return local == base ? nil : local
        case (nil, let remote?):
            return remote == base ? nil : remote
        case (let local?, let remote?):
            return FolderContent(
                name: sideThatChanged(base: base.map(\.name), local: local.name, remote: remote.name),
                parentID: sideThatChanged(base: base.map(\.parentID), local: local.parentID, remote: remote.parentID))
        }
    }

    /// `<stem> (conflicted copy <device> <YYYY-MM-DD>)<ext>` in UTC, kept ≤ 255 bytes (the
    /// stem is cut, the device name to `deviceNameBytesMax`); an empty stem reads `Untitled`.
    public static func conflictCopyTitle(for title: String, device: String, date: Date) -> String {
        let deviceName = NameParts.prefix(device[...], bytesMax: deviceNameBytesMax)
        return titleWithNote(title, note: "\(conflictCopyMarker)\(deviceName) \(utcDay(of: date)))")
    }

    /// The id of note `note`'s conflict copy holding device `device`'s text: one
    /// per note and device, so a later clash updates that copy (and a retry
    /// cannot make a second); a deleted copy comes back under the same id.
    public static func conflictCopyID(of note: NoteID, device: DeviceID) -> NoteID {
        NoteID(NameBasedID.make(namespace: conflictCopyNamespace, name: "\(note) \(device)"))
    }

    /// The text of a conflict copy that already holds `old` after a further
    /// clash leaves `new`: every line of both (`TextMerge.union`), so nothing
    /// either clash kept is lost.
    public static func updatedConflictCopy(old: Data, new: Data) -> Data {
        TextMerge.union(old, new)
    }

    /// True when `title` reads like a conflict copy's (`… (conflicted copy <device> <date>)…`).
    public static func looksLikeConflictCopy(_ title: String) -> Bool {
        title.contains(conflictCopyMarker)
    }

    /// The title of the note a conflict copy named `copyTitle` was made of:
    /// the copy's title without its `(conflicted copy …)` insert; nil when it has none.
    public static func originalTitle(ofConflictCopy copyTitle: String) -> String? {
        guard let start = copyTitle.range(of: conflictCopyMarker, options: .backwards) else { return nil }
        // The insert ends with ` YYYY-MM-DD)`; the device name may hold anything, `)` too.
        let rest = Array(copyTitle[start.upperBound...].utf8)
        for close in rest.indices where rest[close] == UInt8(ascii: ")") && close >= 11 {
            let date = rest[(close - 11)..<close]
            let digits = [1, 2, 3, 4, 6, 7, 9, 10].map { date[date.startIndex + $0] }
            guard date[date.startIndex] == UInt8(ascii: " "), date[date.startIndex + 5] == UInt8(ascii: "-"),
                date[date.startIndex + 8] == UInt8(ascii: "-"),
                digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else { continue }
            let ext = String(decoding: rest[(close + 1)...], as: UTF8.self)
            return String(copyTitle[..<start.lowerBound]) + ext
        }
        return nil
    }

    static let conflictCopyMarker = " (conflicted copy "


    /// `<stem> (not synced)<ext>` for the local text of a refused change, kept ≤ 255 bytes.
    public static func notSyncedTitle(for title: String) -> String {
        titleWithNote(title, note: " (not synced)")
    }

    /// Each side keeps what it did not change: a value changed on one side wins; when
    /// both changed it differently (or there is no base), the server's value wins.
    static func sideThatChanged<Value: Equatable>(base: Value?, local: Value, remote: Value) -> Value {
        if let base, base == remote { return local }
        return remote
    }

    /// Titles compared byte for byte: a title is a file name, and `String ==` would call
    /// a rename between precomposed and decomposed `é` no change.
    static func sideThatChanged(base: String?, local: String, remote: String) -> String {
        if let base, NameParts.sameBytes(base, remote) { return local }
        return remote
    }

    private static func titleWithNote(_ title: String, note: String) -> String {
        let (stem, ext) = NameParts.split(title)
        let shownStem = stem.utf8.isEmpty ? NameCodec.untitledName[...] : stem
        return NameParts.fit(stem: shownStem, insert: note, ext: ext, bytesMax: NameCodec.maxNameBytes)
    }

    /// `YYYY-MM-DD` of `date` in UTC, by the proleptic Gregorian calendar (Hinnant's
    /// days-to-civil), so no locale or time zone database is involved.
    static func utcDay(of date: Date) -> String {
        let secondsPerDay = 86_400.0
        // Clamped to years 0000...9999 so any Date, even a corrupt one, formats.
        let daysMin = -719_528.0
        let daysMax = 2_932_896.0
        let rawDays = (date.timeIntervalSince1970 / secondsPerDay).rounded(.down)
        let days = Int(rawDays.isNaN ? 0 : min(max(rawDays, daysMin), daysMax))
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
    }

    private static func padded(_ number: Int, _ width: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
