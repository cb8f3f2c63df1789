import Foundation
import NotesStore

struct ExportCommand: Command {
    static let name = "export"
    static let summary = "Write your notes out as a plain tree of files (a backup)"
    static let help = """
        Usage: notesfs export <dir> [--all] [--data DIR | --profile NAME]

        Writes every note as a file and every folder as a directory under <dir>,
        named exactly as the mount shows them, with their modification times.
        <dir> is created when missing; existing files with the same names are
        overwritten. `notesfs import` reads such a tree back.
          --all    also write the files kept only on this machine, which never
                   sync: hidden files and directories (.git, .plan), editor
                   scratch files (~draft.md, *.tmp, swap files) and symbolic links
        Without --all those are left out, and the summary says how many.
        """
    static let spec = ArgumentSpec(options: DataLocation.options, flags: ["--all"], positional: 1...1)

    /// What an export wrote.
    struct Counts {
        var notes = 0
        var folders = 0
        /// Local-only files and symbolic links written (with --all).
        var localFiles = 0
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let target = URL(fileURLWithPath: arguments.positional[0], isDirectory: true).standardizedFileURL
        let store = try DataLocation(arguments).openStore(create: false)
        let all = arguments.has("--all")
        do {
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        } catch {
            throw CommandError.failed("cannot create \(target.path): \(error.localizedDescription)")
        }
        var counts = Counts()
        try export(store, directory: .root, to: target, all: all, counts: &counts)
        var summary =
            "Exported \(counted(counts.notes, "note")) in \(counted(counts.folders, "folder"))"
        if all && counts.localFiles > 0 {
            summary += " and \(counted(counts.localFiles, "file")) kept only on this machine"
        }
        summary += " to \(target.path)."
        if !all {
            let status = try store.admin.status()
            if status.localOnlyFiles > 0 {
                var names = status.localOnlyPaths.joined(separator: ", ")
                if status.localOnlyTopLevel > status.localOnlyPaths.count { names += ", …" }
                summary += " Left out \(counted(status.localOnlyFiles, "file")) kept only on this machine (\(names));"
                    + " add --all to include them."
            }
        }
        console.out(summary)
        return 0
    }

    static func counted(_ value: Int, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }

    private static func export(
        _ store: NotesStore, directory: DirectoryRef, to url: URL, all: Bool, counts: inout Counts
    ) throws {
        var cookie: Int64 = 0
        while true {
            let entries = try store.tree.list(directory: directory, afterCookie: cookie, limit: 500)
            guard let last = entries.last else { break }
            cookie = last.cookie
            for entry in entries {
                let child = url.appendingPathComponent(entry.name)
                switch entry.ref {
                case .folder(let id):
                    try FileManager.default.createDirectory(at: child, withIntermediateDirectories: true)
                    try export(store, directory: .folder(id), to: child, all: all, counts: &counts)
                    counts.folders += 1
                case .note:
                    try write(store, entry, to: child)
                    counts.notes += 1
                case .local(let seq) where all:
                    switch entry.kind {
                    case .directory:
                        try FileManager.default.createDirectory(at: child, withIntermediateDirectories: true)
                        try export(store, directory: .local(seq), to: child, all: all, counts: &counts)
                    case .symlink:
                        try? FileManager.default.removeItem(at: child)
                        try FileManager.default.createSymbolicLink(
                            atPath: child.path, withDestinationPath: try store.tree.readLink(entry.ref))
                        counts.localFiles += 1
                    case .file:
                        try write(store, entry, to: child)
                        counts.localFiles += 1
                    }
                case .local, .root:
                    continue
                }
            }
        }
    }

    private static func write(_ store: NotesStore, _ entry: Entry, to url: URL) throws {
        // Atomic: a file kept read-only (a git object) is replaced, not opened for writing.
        try store.admin.contents(of: entry.ref).write(to: url, options: .atomic)
        let date = Date(timeIntervalSince1970: Double(entry.modifiedNanoseconds) / 1e9)
        // The mode too: a git hook or a script kept here stays executable.
        try FileManager.default.setAttributes(
            [.modificationDate: date, .posixPermissions: Int(entry.mode & 0o7777)], ofItemAtPath: url.path)
    }
}
