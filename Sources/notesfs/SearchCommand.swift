import Foundation
import NotesModel
import NotesStore

struct SearchCommand: Command {
    static let name = "search"
    static let summary = "Full-text search over note titles and bodies"
    static let help = """
        Usage: notesfs search <words...> [--in FOLDER] [--json] [--limit N] [--data DIR | --profile NAME]

        Lists the notes that match every word: notes whose title matches first,
        then the best matches, each with its path and a snippet (matches in
        [brackets]). Case and accents do not matter.
          word         finds the word's other forms too: pancake finds Pancakes,
                       crepe finds Crêpes, run finds running
          word*        finds every word that starts with it: panc* finds pancetta
          "two words"  finds the words side by side, in this order. Quote it for
                       the shell as '"olive oil"'; an argument with spaces in it
                       ("olive oil") is such a phrase too
          --in FOLDER  only notes in FOLDER and the folders inside it (its path as
                       the mount shows it, from the mount's root: Work/Projects)
          --limit N    show at most N notes (default 20)
          --json       machine-readable output
        A note whose body is not text (an image, a PDF) shows no snippet; one that
        looks binary is found by its title only.
        """
    static let spec = ArgumentSpec(
        options: DataLocation.options.union(["--limit", "--in"]), flags: ["--json"], positional: 1...64)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let limit = try arguments.integer("--limit", default: 20)
        guard limit > 0 else { throw CommandError.usage("--limit must be at least 1") }
        let store = try DataLocation(arguments).openStore(create: false)
        let directory = try arguments.option("--in").map { try folder($0, in: store) }
        let query = SearchQuery(queryText(arguments.positional))
        guard !query.isEmpty else {
            throw CommandError.usage("give at least one word to search for (letters or digits)")
        }
        let hits = try store.admin.search(query, in: directory, limit: limit)
        if arguments.has("--json") {
            let items = hits.map { hit -> [String: Any] in
                ["id": hit.noteID.description, "path": hit.path, "title": hit.title, "snippet": hit.snippet,
                 "bodyIsText": hit.bodyIsText]
            }
            let data = try JSONSerialization.data(
                withJSONObject: items, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            if hits.isEmpty { console.error("No notes match.") }
            for hit in hits {
                console.out(hit.path)
                if !hit.bodyIsText {
                    console.out("    (not text)")
                } else if !hit.snippet.isEmpty {
                    console.out("    " + hit.snippet.replacingOccurrences(of: "\n", with: " "))
                }
            }
        }
        return 0
    }

    /// The arguments as one query: an argument with spaces in it (the shell
    /// kept it together) is a phrase, unless it has quotes of its own.
    static func queryText(_ words: [String]) -> String {
        words.map { word in
            guard word.contains(where: \.isWhitespace), !word.contains("\"") else { return word }
            var text = Substring(word)
            var stars = ""
            while text.last == "*" {
                text = text.dropLast()
                stars += "*"
            }
            return "\"" + text + "\"" + stars
        }.joined(separator: " ")
    }

    /// The folder at `path` (as the mount shows it, from its root).
    static func folder(_ path: String, in store: NotesStore) throws -> DirectoryRef {
        var directory = DirectoryRef.root
        for component in path.split(separator: "/") where component != "." {
            guard let entry = try store.tree.lookup(in: directory, name: String(component)),
                case .folder(let id) = entry.ref
            else {
                throw CommandError.failed(
                    "no folder '\(path)' among your notes; give its path as the mount shows it, from the mount's "
                        + "root (for example Work/Projects)")
            }
            directory = .folder(id)
        }
        return directory
    }
}
