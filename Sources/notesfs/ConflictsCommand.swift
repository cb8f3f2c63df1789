import Foundation
import FuseKit
import NotesFS
import NotesModel
import NotesStore

/// `notesfs conflicts [resolve PATH --keep note|copy|both]`.
struct ConflictsCommand: Command {
    static let name = "conflicts"
    static let summary = "List conflict copies with their differences, or settle one"
    static let help = """
        Usage: notesfs conflicts [--json] [--data DIR | --profile NAME]
               notesfs conflicts resolve PATH --keep note|copy|both [--data DIR | --profile NAME]

        Without arguments, lists each conflict copy with the note it was made of
        and a unified diff from the note to the copy.

        resolve settles one copy on every machine (as ordinary edits that sync):
          --keep note   keep the note as it is
          --keep copy   put the copy's text into the note
          --keep both   add the copy's lines the note lacks to the note's end
        and then deletes the copy. PATH is the copy as a file in the mount, or its
        path as 'notesfs conflicts' lists it (from the mount's root). Works while
        mounted, too.

        There is at most one copy per note and machine: a later clash on the same
        note adds its lines to that copy.
          --json   the list as JSON: copy, note (paths), copyID, noteID
        """
    static let spec = ArgumentSpec(options: DataLocation.options.union(["--keep"]), flags: ["--json"], positional: 0...2)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let store = try DataLocation(arguments).openStore(create: false)
        switch arguments.positional.first {
        case nil:
            guard arguments.option("--keep") == nil else { throw CommandError.usage("--keep goes with resolve") }
            return try list(store, json: arguments.has("--json"), console: console)
        case "resolve":
            guard arguments.positional.count == 2 else { throw CommandError.usage("resolve needs the copy's PATH") }
            guard let keepText = arguments.option("--keep") else {
                throw CommandError.usage("resolve needs --keep note, --keep copy or --keep both")
            }
            guard let keep = ConflictResolution(rawValue: keepText) else {
                throw CommandError.usage("--keep takes note, copy or both, not '\(keepText)'")
            }
            return try resolve(store, path: arguments.positional[1], keep: keep, console: console)
        case let other?:
            throw CommandError.usage("unknown action '\(other)' (the only one is resolve)")
        }
    }

    static func list(_ store: NotesStore, json: Bool, console: Console) throws -> Int32 {
        let copies = try store.admin.conflictCopies()
        if json {
            let items = copies.map { copy -> [String: Any] in
                var item: [String: Any] = ["copy": copy.copyPath, "copyID": copy.copy.description]
                if let note = copy.note { item["noteID"] = note.description }
                if let path = copy.notePath { item["note"] = path }
                return item
            }
            let data = try JSONSerialization.data(
                withJSONObject: ["conflictCopies": items], options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
            return 0
        }
        guard !copies.isEmpty else {
            console.out("No conflict copies.")
            return 0
        }
        for copy in copies {
            console.out("Conflict copy: \(copy.copyPath)")
            guard let note = copy.note, let notePath = copy.notePath else {
                console.out("  copy of a note that is gone (rename the copy to keep it as a note)\n")
                continue
            }
            console.out("  copy of: \(notePath)")
            let diff = UnifiedDiff.make(
                old: try store.admin.contents(of: .note(note)), new: try store.admin.contents(of: .note(copy.copy)),
                oldLabel: String(notePath.drop { $0 == "/" }), newLabel: String(copy.copyPath.drop { $0 == "/" }))
            FileHandle.standardOutput.write(diff.isEmpty ? Data("  (same text as the note)\n".utf8) : diff)
            console.out("")
        }
        console.out(ConflictCopyInfo.howToResolve)
        return 0
    }

    static func resolve(_ store: NotesStore, path: String, keep: ConflictResolution, console: Console) throws -> Int32 {
        guard let copy = try copyID(store, path: path) else {
            throw CommandError.failed(
                "'\(path)' is not a conflict copy of these notes (see 'notesfs conflicts' for their paths)")
        }
        let copies = try store.admin.conflictCopies()
        guard let info = copies.first(where: { $0.copy == copy }) else {
            throw CommandError.failed("'\(path)' is not a conflict copy (see 'notesfs conflicts')")
        }
        if info.note == nil && keep != .note {
            throw CommandError.failed(
                "the note of '\(info.copyPath)' is gone; rename the copy to keep its text as a note, "
                    + "or use --keep note to delete it")
        }
        try store.admin.resolveConflictCopy(copy, keep: keep)
        let what: String
        switch keep {
        case .note: what = "kept \(info.notePath ?? "the note") as it is"
        case .copy: what = "put the copy's text into \(info.notePath ?? "the note")"
        case .both: what = "added the copy's lines to \(info.notePath ?? "the note")"
        }
        console.out("Resolved: \(what) and deleted \(info.copyPath); this syncs to your other machines.")
        return 0
    }

    /// The copy a PATH names: a file in a mounted notesfs (by its path from
    /// that mount's root), or a path as listed, from the mount's root.
    static func copyID(_ store: NotesStore, path: String) throws -> NoteID? {
        if let inMount = pathInMount(path), let id = try store.admin.noteID(atPath: inMount) { return id }
        return try store.admin.noteID(atPath: path)
    }

    /// `path` from the root of the notesfs mount holding it, if it is an existing file in one.
    static func pathInMount(_ path: String) -> String? {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: absolute) else { return nil }
        let mount = MountTable.mounts()
            .filter { $0.fileSystemType.hasSuffix("notesfs") && absolute.hasPrefix($0.mountpoint + "/") }
            .max { $0.mountpoint.count < $1.mountpoint.count }
        return mount.map { String(absolute.dropFirst($0.mountpoint.count)) }
    }
}
