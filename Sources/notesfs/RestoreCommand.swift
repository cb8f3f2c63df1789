import Foundation
import NotesStore

struct RestoreCommand: Command {
    static let name = "restore"
    static let summary = "List or bring back text kept in the local history"
    static let help = """
        Usage: notesfs restore [<entry>] [--data DIR | --profile NAME]

        When a save truncates a note or shrinks it by more than half, the old text
        is kept for 7 days. Without an argument, lists those entries (newest
        first); with an entry number, puts that text back into its note (as an
        ordinary edit, so it syncs). Works while mounted, too.
        """
    static let spec = ArgumentSpec(options: DataLocation.options, positional: 0...1)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let store = try DataLocation(arguments).openStore(create: false)
        guard let argument = arguments.positional.first else {
            let entries = try store.history()
            if entries.isEmpty { console.out("The local history is empty.") }
            let formatter = ISO8601DateFormatter()
            for entry in entries {
                let date = formatter.string(from: Date(timeIntervalSince1970: Double(entry.savedNanoseconds) / 1e9))
                console.out("\(entry.seq)\t\(date)\t\(entry.reason)\t\(entry.size) bytes\t\(entry.title)")
            }
            return 0
        }
        guard let seq = Int64(argument) else { throw CommandError.usage("'\(argument)' is not a history entry number") }
        let id = try store.restore(historyEntry: seq)
        console.out("Restored entry \(seq) into \(try store.path(of: .note(id)) ?? id.description).")
        return 0
    }
}
