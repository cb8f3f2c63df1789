import Foundation
import NotesStore

struct SearchCommand: Command {
    static let name = "search"
    static let summary = "Full-text search over note titles and bodies"
    static let help = """
        Usage: notesfs search <words...> [--json] [--limit N] [--data DIR | --profile NAME]

        Lists notes containing every word, best matches first, with their path
        and a snippet (matches in [brackets]).
        """
    static let spec = ArgumentSpec(options: DataLocation.options.union(["--limit"]), flags: ["--json"], positional: 1...64)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let limit = try arguments.integer("--limit", default: 20)
        guard limit > 0 else { throw CommandError.usage("--limit must be at least 1") }
        let store = try DataLocation(arguments).openStore(create: false)
        let hits = try store.search(arguments.positional.joined(separator: " "), limit: limit)
        if arguments.has("--json") {
            let items = hits.map { ["id": $0.noteID.description, "path": $0.path, "title": $0.title, "snippet": $0.snippet] }
            let data = try JSONSerialization.data(withJSONObject: items, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            if hits.isEmpty { console.error("No notes match.") }
            for hit in hits {
                console.out(hit.path)
                console.out("    " + hit.snippet.replacingOccurrences(of: "\n", with: " "))
            }
        }
        return 0
    }
}
