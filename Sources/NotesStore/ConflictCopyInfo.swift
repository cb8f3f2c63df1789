import Foundation
import NotesModel

/// A conflict copy and the note it was made of, for `notesfs conflicts`.
public struct ConflictCopyInfo: Sendable, Equatable {
    public var copy: NoteID
    /// The copy's path in the mount.
    public var copyPath: String
    /// Its note: named by the copy when this machine made it, else found by
    /// the copy's title in the same folder; nil when it is gone.
    public var note: NoteID?
    public var notePath: String?
}

/// What `notesfs conflicts resolve --keep` keeps.
public enum ConflictResolution: String, Sendable, CaseIterable {
    /// The note as it is; the copy goes.
    case note
    /// The copy's text, put into the note; the copy goes.
    case copy
    /// The note, with the copy's lines it lacks added at its end; the copy goes.
    case both
}

extension ConflictCopyInfo {
    /// How to settle conflict copies, for `.notesfs/conflicts` and `notesfs conflicts`.
    public static let howToResolve = """
        Each conflict copy holds one machine's text of a note where edits to the same
        lines clashed. Settle one, on every machine, with
          notesfs conflicts resolve PATH --keep note|copy|both
        note: keep the note as it is; copy: put the copy's text into the note;
        both: add the copy's lines the note lacks to the note's end. The copy is
        then deleted. 'notesfs conflicts' shows each copy against its note.
        """

    /// The listing in `.notesfs/conflicts`: each copy with its note, then how to settle them.
    public static func listing(_ copies: [ConflictCopyInfo]) -> String {
        guard !copies.isEmpty else { return "No conflict copies.\n" }
        var lines = ["\(copies.count) conflict cop\(copies.count == 1 ? "y" : "ies"):"]
        for copy in copies {
            lines.append(copy.copyPath)
            lines.append("  copy of " + (copy.notePath ?? "a note that is gone (rename the copy to keep it)"))
        }
        return lines.joined(separator: "\n") + "\n\n" + howToResolve + "\n"
    }
}
