import Foundation
import NotesModel
import NotesStore
import SyncEngine
import SyncProtocol

/// `notesfs show PATH@TIME`: a note's text as it was at a moment.
struct ShowCommand: Command {
    static let name = "show"
    static let summary = "Print a note's text as it was at a past moment (PATH@TIME)"
    static let help = """
        Usage: notesfs show PATH@TIME [--data DIR | --profile NAME]

        Prints the text the note at PATH had at TIME. TIME is local time:
        \(MomentTime.syntax), e.g. plan.md@2026-12-03T13:10
        (a date alone is its midnight). PATH is the note's path in the mount
        (absolute, relative to the working directory inside the mount, or from
        the mount's root): a note there now, or deleted from there (see
        'notesfs trash list'). A path the note had only at TIME (it was
        renamed or moved since) is looked up in the tree of TIME.
        The text comes from the server's history. Without a server, or when it
        cannot be reached, it comes from this machine's records and may be
        later than TIME (a line on standard error says so). The mount shows
        whole moments in .notesfs/at/TIME/.
        """
    static let spec = ArgumentSpec(options: DataLocation.options, positional: 1...1)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let argument = arguments.positional[0]
        guard let at = argument.lastIndex(of: "@") else {
            throw CommandError.usage("give the note and the time as PATH@TIME, e.g. plan.md@2026-12-03T13:10")
        }
        let timeText = String(argument[argument.index(after: at)...])
        guard let time = MomentTime.parse(timeText) else {
            throw CommandError.usage("'\(timeText)' is not a time: write \(MomentTime.syntax)")
        }
        let history = try NoteHistory(arguments)
        let path = NoteHistory.pathFromRoot(String(argument[..<at]))
        let shown = "/\(path) at \(MomentTime.localText(time))"
        let id = try history.noteID(atPath: path)
        let answer = history.askServer { transport in try await serverText(transport, id: id, path: path, at: time) }
        switch answer {
        case .success(.text(let text)):
            FileHandle.standardOutput.write(text)
            return 0
        case .success(.notYet(let first)):
            throw CommandError.failed(
                "\(shown): the note did not exist yet (its first version is from \(MomentTime.localText(first))). "
                    + "Try a later time; 'notesfs log \(path)' lists its versions.")
        case .success(.deleted(let when)):
            throw CommandError.failed(
                "\(shown): the note was deleted then (at \(MomentTime.localText(when))). Try an earlier time; "
                    + "'notesfs log \(path)' lists its versions.")
        case .success(.none):
            throw CommandError.failed(
                "\(shown): no note had this path then, and the server has no versions of a note at this path now. "
                    + "Look for it in .notesfs/at/\(MomentTime.name(time))/ in the mount.")
        case .failure(let reason):
            let (tree, _) = try history.offlineTree(at: time)
            let node = id.flatMap { id in tree.nodes.firstIndex { $0.id == id.uuid } } ?? tree.node(atPath: path)
            guard let node, let body = tree.nodes[node].body else {
                throw CommandError.failed(
                    "\(shown): offline (\(reason.words)), and this machine's records have no note at this path "
                        + "then. Ask again when the server can be reached.")
            }
            console.error(
                "Offline: \(reason.words). This is this machine's view only; the text may be later than the "
                    + "time asked if the note changed since and no older copy was kept here.")
            FileHandle.standardOutput.write(try history.store.tree.momentText(body))
            return 0
        }
    }

    enum ServerAnswer: Sendable {
        case text(Data)
        case notYet(first: Date)
        case deleted(at: Date)
        case none
    }

    /// The note's text at `time` by its id; else the note at `path` in the
    /// tree of `time`.
    static func serverText(_ transport: HTTPSyncTransport, id: NoteID?, path: String, at time: Date) async throws
        -> ServerAnswer
    {
        if let id {
            let versions = try await transport.allVersions(of: .note(id)).items
            if let version = versions.first(where: { $0.time <= time }) {
                if version.deleted { return .deleted(at: version.time) }
                guard let entity = try await transport.version(of: .note(id), version: version.version),
                    let bytes = entity.note?.bodyBytes()
                else {
                    throw CommandError.failed("the server no longer keeps that version (trimmed)")
                }
                return .text(bytes)
            }
            if let first = versions.last { return .notYet(first: first.time) }
        }
        let (items, _) = try await transport.momentItems(at: time)
        let tree = MomentTree(items: items)
        guard let node = tree.node(atPath: path), let id = tree.nodes[node].id else { return .none }
        switch tree.nodes[node].body {
        case .text(let bytes)?:
            return .text(bytes)
        case .server(let version)?:
            guard let bytes = try await transport.momentText(of: NoteID(id), version: version) else {
                throw CommandError.failed("the server no longer keeps that version (trimmed)")
            }
            return .text(bytes)
        default:
            return .none
        }
    }
}
