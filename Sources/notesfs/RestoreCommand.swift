import Foundation
import NotesStore

struct RestoreCommand: Command {
    static let name = "restore"
    static let summary = "List or bring back text kept in the local history"
    static let help = """
        Usage: notesfs restore [--data DIR | --profile NAME]
               notesfs restore <entry> [--to PATH] [--data DIR | --profile NAME]

        When a save truncates a note or shrinks it by more than half, the old text
        is kept for 7 days (at most 256 MiB in all, the oldest going first).
        Without an argument, lists those entries, newest first: the entry's
        number, when and why the copy was kept, the note's path then, and its
        size. The mount shows the same entries in .notesfs/history.
        With an entry (its number, or its whole name in .notesfs/history), puts
        that text back into its note as an ordinary edit, so it syncs. A note
        that is gone comes back as a new note in its own folder (made again if
        that is gone too). Works while mounted, too.
          --to PATH   write the text to the file PATH instead (or into PATH under
                      the note's name, when PATH is a directory); the note is left
                      as it is, and an existing file is never overwritten
        """
    static let spec = ArgumentSpec(options: DataLocation.options.union(["--to"]), positional: 0...1)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let store = try DataLocation(arguments).openStore(create: false)
        guard let argument = arguments.positional.first else {
            if arguments.option("--to") != nil { throw CommandError.usage("--to needs an entry: notesfs restore <entry> --to PATH") }
            try list(store, console: console)
            return 0
        }
        let seq: Int64
        if let number = Int64(argument.hasPrefix("#") ? String(argument.dropFirst()) : argument) {
            seq = number
        } else if let entry = try store.admin.historyEntry(named: argument) {
            seq = entry.seq
        } else {
            throw CommandError.usage(
                "'\(argument)' is neither a history entry number nor the name of an entry (see notesfs restore)")
        }
        guard let entry = try store.admin.historyEntry(seq) else {
            throw CommandError.failed("no history entry \(seq) (it may have been pruned); see notesfs restore")
        }
        if let destination = arguments.option("--to") {
            let written = try write(try store.admin.historyBody(seq), of: entry, to: destination)
            console.out("Wrote entry \(seq) (\(entry.size) bytes, kept \(entry.savedAtText)) to \(written).")
            return 0
        }
        let id = try store.admin.restore(historyEntry: seq)
        console.out("Restored entry \(seq) into \(try store.path(of: .note(id)) ?? id.description).")
        return 0
    }

    /// The entries, newest first, one a line: number, time, why, path, size.
    static func list(_ store: NotesStore, console: Console) throws {
        let entries = try store.admin.history()
        guard !entries.isEmpty else {
            console.out("The local history is empty.")
            return
        }
        let numberWidth = entries.map { "#\($0.seq)".count }.max() ?? 2
        let reasonWidth = entries.map(\.reason.words.count).max() ?? 9
        for entry in entries {
            let number = String(repeating: " ", count: numberWidth - "#\(entry.seq)".count) + "#\(entry.seq)"
            let reason = entry.reason.words.padding(toLength: reasonWidth, withPad: " ", startingAt: 0)
            let path = entry.path.isEmpty ? "(untitled)" : "/" + entry.path
            console.out("\(number)  \(entry.savedAtText)  \(reason)  \(path)  (\(entry.size) bytes)")
        }
        console.error("Bring one back with 'notesfs restore NUMBER', or copy it out with 'notesfs restore NUMBER --to FILE'.")
    }

    /// Writes a kept copy to `path`, or into it under the note's name when it
    /// is a directory; never over an existing file. Returns the file written.
    static func write(_ body: Data, of entry: HistoryEntry, to path: String) throws -> String {
        var url = URL(fileURLWithPath: path).standardizedFileURL
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            let name = entry.path.split(separator: "/").last.map(String.init) ?? "restored"
            url.appendPathComponent(name)
        }
        do {
            try body.write(to: url, options: .withoutOverwriting)
        } catch {
            if FileManager.default.fileExists(atPath: url.path) {
                throw CommandError.failed("\(url.path) exists; give another path (restore never overwrites a file)")
            }
            throw CommandError.failed("cannot write \(url.path): \(error.localizedDescription)")
        }
        return url.path
    }
}
