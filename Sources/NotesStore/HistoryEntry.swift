import Foundation
import NotesModel

/// A body kept in the local history, and the name it is shown under.
public struct HistoryEntry: Hashable, Sendable {
    public var seq: Int64
    public var noteID: NoteID
    /// The note's path from the mount root when the copy was kept, without a
    /// leading `/` (its title, for entries kept before paths were).
    public var path: String
    public var size: Int64
    public var savedNanoseconds: Int64
    public var reason: HistoryReason

    /// The file name in `.notesfs/history` (and in `notesfs restore`): the
    /// note's path with `/` shown as `∕`, then why and when it was kept and
    /// the entry's number, before the extension, as conflict copies are named:
    /// `Work∕todo (truncated 2025-01-05 14.03.22 #17).md`. Local time.
    public var name: String {
        var shown = path.isEmpty ? NameCodec.untitledName : path
        shown = shown.replacingOccurrences(of: "/", with: "\u{2215}").replacingOccurrences(of: "\0", with: "\u{2400}")
        let (stem, ext) = NameParts.split(shown)
        let insert = " (\(reason.words) \(Self.localTime(savedNanoseconds)) #\(seq))"
        return NameParts.fit(stem: stem, insert: insert, ext: ext, bytesMax: NameCodec.maxNameBytes)
    }

    /// When the copy was kept, as `2025-01-05 14:03:22` in local time.
    public var savedAtText: String {
        Self.localTime(savedNanoseconds).replacingOccurrences(of: ".", with: ":")
    }

    /// The entry number in a name made by `name`, if it has one.
    static func seq(fromName name: String) -> Int64? {
        // The last `#<digits>)`: a title may hold `#` and `)` of its own.
        var end = name.endIndex
        while let hash = name[..<end].lastIndex(of: "#") {
            let digits = name[name.index(after: hash)...].prefix { ("0"..."9").contains($0) }
            if !digits.isEmpty, digits.endIndex < name.endIndex, name[digits.endIndex] == ")",
                let seq = Int64(digits)
            {
                return seq
            }
            end = hash
        }
        return nil
    }

    /// `yyyy-MM-dd HH.mm.ss` in local time (dots: a colon is not allowed in
    /// names on some systems a copy may land on).
    static func localTime(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds.quotientRoundingDown(by: 1_000_000_000))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return "0000-00-00 00.00.00" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)).\(two(parts.tm_min)).\(two(parts.tm_sec))"
    }
}

/// What the local history holds in all.
public struct HistoryTotal: Hashable, Sendable {
    public var bytes: Int64
    public var entries: Int64

    public init(bytes: Int64, entries: Int64) {
        self.bytes = bytes
        self.entries = entries
    }
}

/// Why a history entry was kept.
public enum HistoryReason: Hashable, Sendable {
    /// The note was cut to nothing.
    case truncated
    /// The note shrank to less than half.
    case shrunk
    /// Text found again after a crash, kept before it was replaced.
    case crashRecovery
    /// The note's text before a conflict replaced it.
    case conflict
    /// The note's text before the server refused it and it was reset.
    case refused
    /// A reason this version does not know (written by a newer one).
    case other(String)

    init(stored: String) {
        switch stored {
        case "truncated": self = .truncated
        case "shrunk": self = .shrunk
        case "crash-recovery": self = .crashRecovery
        case "conflict": self = .conflict
        case "refused": self = .refused
        default: self = .other(stored)
        }
    }

    /// The value kept in the database.
    var stored: String {
        switch self {
        case .truncated: "truncated"
        case .shrunk: "shrunk"
        case .crashRecovery: "crash-recovery"
        case .conflict: "conflict"
        case .refused: "refused"
        case .other(let text): text
        }
    }

    /// How names and `notesfs restore` say it.
    public var words: String {
        switch self {
        case .crashRecovery: "crash recovery"
        case .other(let text): String(text.prefix(32)).replacingOccurrences(of: "/", with: "\u{2215}")
        default: stored
        }
    }
}

extension Int64 {
    fileprivate func quotientRoundingDown(by divisor: Int64) -> Int64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? quotient - 1 : quotient
    }
}
