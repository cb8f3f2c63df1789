import Foundation
import NotesStore

struct ExportCommand: Command {
    static let name = "export"
    static let summary = "Write your notes out as a plain tree of files (a backup)"
    static let help = """
        Usage: notesfs export <dir> [--data DIR | --profile NAME]

        Writes every note as a file and every folder as a directory under <dir>,
        named exactly as the mount shows them, with their modification times.
        <dir> is created when missing; existing files with the same names are
        overwritten. Local-only files (.git, swap files) are not exported.
        `notesfs import` reads such a tree back.
        """
    static let spec = ArgumentSpec(options: DataLocation.options, positional: 1...1)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let target = URL(fileURLWithPath: arguments.positional[0], isDirectory: true).standardizedFileURL
        let store = try DataLocation(arguments).openStore(create: false)
        do {
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        } catch {
            throw CommandError.failed("cannot create \(target.path): \(error.localizedDescription)")
        }
        var counts = (notes: 0, folders: 0)
        try export(store, directory: .root, to: target, counts: &counts)
        console.out("Exported \(counts.notes) notes in \(counts.folders) folders to \(target.path).")
        return 0
    }

    private static func export(
        _ store: NotesStore, directory: DirectoryRef, to url: URL, counts: inout (notes: Int, folders: Int)
    ) throws {
        var cookie: Int64 = 0
        while true {
            let entries = try store.list(directory: directory, afterCookie: cookie, limit: 500)
            guard let last = entries.last else { break }
            cookie = last.cookie
            for entry in entries {
                let child = url.appendingPathComponent(entry.name)
                switch entry.ref {
                case .folder(let id):
                    try FileManager.default.createDirectory(at: child, withIntermediateDirectories: true)
                    try export(store, directory: .folder(id), to: child, counts: &counts)
                    counts.folders += 1
                case .note:
                    try store.contents(of: entry.ref).write(to: child)
                    let date = Date(timeIntervalSince1970: Double(entry.modifiedNanoseconds) / 1e9)
                    try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: child.path)
                    counts.notes += 1
                case .local, .root:
                    continue
                }
            }
        }
    }
}
