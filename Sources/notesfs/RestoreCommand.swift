import Foundation
import NotesStore

struct RestoreCommand: Command {
    static let name = "restore"
    static let summary = "List or bring back text kept in the local history"
    static let help = """
        Usage: notesfs restore [<entry>] [--data DIR | --profile NAME]

        When a save truncates a note or shrinks it by more than half, the old text
        is kept for 7 days (at most 256 MiB in all, the oldest going first).
        Without an argument, lists those entries, newest first, by the names they
        have in the mount's .notesfs/history: the note's path, why and when the
        copy was kept, and the entry's number, as in
        'Work∕todo (truncated 2025-01-05 14.03.22 #17).md'. With an entry (its
        number, or its whole name), puts that text back into its note (as an
        ordinary edit, so it syncs). Works while mounted, too.
        """
    static let spec = ArgumentSpec(options: DataLocation.options, positional: 0...1)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let store = try DataLocation(arguments).openStore(create: false)
        guard let argument = arguments.positional.first else {
            let entries = try store.history()
            if entries.isEmpty { console.out("The local history is empty.") }
            for entry in entries {
                console.out("\(entry.name)\t\(entry.size) bytes")
            }
            return 0
        }
        let seq: Int64
        if let number = Int64(argument.hasPrefix("#") ? String(argument.dropFirst()) : argument) {
            seq = number
        } else if let entry = try store.historyEntry(named: argument) {
            seq = entry.seq
        } else {
            throw CommandError.usage(
                "'\(argument)' is neither a history entry number nor the name of an entry (see notesfs restore)")
        }
        let id = try store.restore(historyEntry: seq)
        console.out("Restored entry \(seq) into \(try store.path(of: .note(id)) ?? id.description).")
        return 0
    }
}
