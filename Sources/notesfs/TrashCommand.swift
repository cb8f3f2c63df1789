import Foundation
import NotesModel
import NotesStore

/// `notesfs trash [list | restore PATH... | empty [--yes]]`.
struct TrashCommand: Command {
    static let name = "trash"
    static let summary = "List, bring back or forget recently deleted notes"
    static let help = """
        Usage: notesfs trash [list] [--data DIR | --profile NAME]
               notesfs trash restore PATH... [--data DIR | --profile NAME]
               notesfs trash empty [--yes] [--data DIR | --profile NAME]

        A note deleted on this machine, or on another machine whose deletion
        reached this one, stays in the trash with its last text as long as the
        server keeps its history ('notesfs serve --history-days', 30 by
        default; 30 days without a server). The mount shows the trash read-only
        in .notesfs/trash, in the old folders.
        Deletions held by the mass-delete guard are not in the trash until they
        are sent (see 'notesfs sync --help').

          list      (the default) each note's deletion time, which machine deleted
                    it, its path in the trash and its size, newest first
          restore   brings back each PATH (a note or a folder of the trash, as list
                    shows it) as the same note with its last text, in its own
                    folder (made again if it is gone); it comes back on every
                    machine. In the mount, 'mv .notesfs/trash/PATH DIR' does the
                    same into DIR.
          empty     forgets every note in this machine's trash; nothing changes on
                    the server or on other machines. Asks first.
          --yes     empty without asking
        Works while mounted, too.
        """
    static let spec = ArgumentSpec(
        options: DataLocation.options, flags: ["--yes"], positional: 0...1_000, actions: ["list", "restore", "empty"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let location = try DataLocation(arguments)
        let action = arguments.positional.first ?? "list"
        let rest = Array(arguments.positional.dropFirst())
        if arguments.has("--yes") && action != "empty" { throw CommandError.usage("--yes goes with empty") }
        switch action {
        case "list":
            guard rest.isEmpty else { throw CommandError.usage("list takes no paths (restore does)") }
            try list(try location.openStore(create: false), console: console)
            return 0
        case "restore":
            guard !rest.isEmpty else {
                throw CommandError.usage("restore needs the PATH of a note or folder in the trash (see notesfs trash list)")
            }
            return try restore(rest, store: try location.openStore(create: false), console: console)
        case "empty":
            guard rest.isEmpty else { throw CommandError.usage("empty takes no paths") }
            return try empty(try location.openStore(create: false), location: location, ask: !arguments.has("--yes"),
                             console: console)
        default:
            throw CommandError.usage("unknown action '\(action)' (list, restore or empty)")
        }
    }

    /// One line a note, newest first: when, which machine, path, size.
    static func list(_ store: NotesStore, console: Console) throws {
        let entries = try store.admin.trash.entries()
        guard !entries.isEmpty else {
            console.out("The trash is empty: no note was deleted here, or reached this machine deleted, in the last 30 days.")
            return
        }
        let shown = TrashTree.shownPaths(entries)
        let originWidth = entries.map(\.origin.words.count).max() ?? 12
        for entry in entries {
            let origin = entry.origin.words.padding(toLength: originWidth, withPad: " ", startingAt: 0)
            let path = "/" + (shown[entry.seq] ?? entry.path)
            console.out("\(entry.deletedAtText)  \(origin)  \(path)  (\(entry.size) bytes)")
        }
        console.error(
            "Bring one back with 'notesfs trash restore PATH' (a folder brings back what is in it), "
                + "or move it out of .notesfs/trash in the mount.")
    }

    static func restore(_ paths: [String], store: NotesStore, console: Console) throws -> Int32 {
        var failed = false
        for argument in paths {
            let path = trashPath(argument)
            let components = path.split(separator: "/").map(String.init)
            guard let name = components.last,
                let node = try store.admin.trash.node(named: name, in: components.dropLast().joined(separator: "/"))
            else {
                console.error(
                    "notesfs trash: '\(argument)' is not in the trash (it may have been restored or emptied); "
                        + "'notesfs trash list' shows what is.")
                failed = true
                continue
            }
            switch node {
            case .note(let entry):
                let id = try store.admin.trash.restore(entry.seq)
                let now = try store.path(of: .note(id)) ?? id.description
                console.out(now == "/" + path ? "Restored \(now)." : "Restored /\(path) as \(now).")
            case .directory(let folder):
                let ids = try store.admin.trash.restoreDirectory(folder)
                for id in ids {
                    console.out("Restored \(try store.path(of: .note(id)) ?? id.description).")
                }
            }
        }
        return failed ? 1 : 0
    }

    /// A path as `list` shows it, or as the mount does (`.notesfs/trash/…`).
    static func trashPath(_ argument: String) -> String {
        var path = argument.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        for prefix in [NameCodec.controlDirectoryName + "/trash/", "trash/"] where path.hasPrefix(prefix) {
            path = String(path.dropFirst(prefix.count))
            break
        }
        return path
    }

    static func empty(_ store: NotesStore, location: DataLocation, ask: Bool, console: Console) throws -> Int32 {
        let count = try store.admin.trash.entries().count
        guard count > 0 else {
            console.out("The trash is already empty.")
            return 0
        }
        if ask {
            let yes = try console.confirm(
                "Forget the \(count) note\(count == 1 ? "" : "s") in the trash of \(location.directory.path)? "
                    + "Their last text is gone from this machine; the server and your other machines keep "
                    + "what they have.",
                withoutTerminal: "empty forgets the last text of \(count) deleted note\(count == 1 ? "" : "s"), "
                    + "so it asks first; on a terminal answer the question, elsewhere add --yes")
            guard yes else {
                console.out("Nothing changed.")
                return 1
            }
        }
        let forgotten = try store.admin.emptyTrash()
        console.out("Emptied the trash: \(forgotten) note\(forgotten == 1 ? "" : "s") forgotten on this machine.")
        return 0
    }
}
