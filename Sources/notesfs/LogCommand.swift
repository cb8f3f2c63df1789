import Foundation
import NotesModel
import NotesStore
import SyncEngine
import SyncProtocol

/// `notesfs log PATH`: a note's versions, newest first.
struct LogCommand: Command {
    static let name = "log"
    static let summary = "List a note's versions: when, from which machine, size, lines changed"
    static let help = """
        Usage: notesfs log PATH [--data DIR | --profile NAME]

        Lists the versions of the note at PATH, newest first: when it was saved
        (local time), which machine made it, its size, and the lines it added
        and removed relative to the version before. PATH is the note's path in
        the mount (absolute, relative to the working directory inside the
        mount, or from the mount's root); a note deleted since is found by the
        path it had (see 'notesfs trash list').
        The versions come from the server's history (kept 30 days by default).
        This machine shows as 'this machine', another by the name it last gave
        the server (its --device-name, or its host name), with the last digits
        of its id when two machines share a name, or as 'device' and those
        digits when it never gave one (a machine with an older notesfs, or
        that has not sent a change since). Without a server,
        or when it cannot be reached, the list is this machine's view only: the
        note's text now and the older texts the local history kept (see
        'notesfs restore'). Print one version with 'notesfs show PATH@TIME'.
        """
    static let spec = ArgumentSpec(options: DataLocation.options, positional: 1...1)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let history = try NoteHistory(arguments)
        let path = NoteHistory.pathFromRoot(arguments.positional[0])
        guard let id = try history.noteID(atPath: path) else {
            throw CommandError.failed(
                "no note is at /\(path) now, in the trash or in the local history. If it was renamed, give the "
                    + "path it has now; to find it as it was, look in .notesfs/at/<moment>/ in the mount.")
        }
        let answer = history.askServer { transport in
            let listing = try await transport.allVersions(of: .note(id))
            var texts: [Int64: Data] = [:]
            for version in listing.items where !version.deleted {
                if let entity = try await transport.version(of: .note(id), version: version.version),
                    let bytes = entity.note?.bodyBytes()
                {
                    texts[version.version] = bytes
                }
            }
            return (listing, texts)
        }
        switch answer {
        case .success(let (listing, texts)) where !listing.items.isEmpty:
            console.out("/\(path): \(listing.items.count) version\(listing.items.count == 1 ? "" : "s") on the server, newest first")
            var lines: [String] = []
            let oldestFirst = listing.items.reversed()
            var previous = Data()
            let devices = try history.deviceLabels(for: listing.items)
            for version in oldestFirst {
                let when = MomentTime.localText(version.time)
                let device = devices.label(version.device)
                if version.deleted {
                    lines.append("\(when)  \(device)  deleted")
                    continue
                }
                let text = texts[version.version]
                let changes = text.map { LineChanges.between(old: previous, new: $0) }
                let counts = changes.map { "+\($0.added) -\($0.removed)" } ?? "(text no longer kept)"
                lines.append("\(when)  \(device)  \(version.size) bytes  \(counts)")
                if let text { previous = text }
            }
            for line in lines.reversed() { console.out(line) }
            if let keptSince = listing.keptSince {
                console.error("The server keeps versions since \(MomentTime.localText(keptSince)); older ones were trimmed.")
            }
            return 0
        case .success:
            try offline(history, id: id, path: path, why: "the server has no versions of this note (never sent?)",
                        console: console)
            return 0
        case .failure(let reason):
            try offline(history, id: id, path: path, why: reason.words, console: console)
            return 0
        }
    }

    /// This machine's view: the text now, then what the local history kept.
    static func offline(_ history: NoteHistory, id: NoteID, path: String, why: String, console: Console) throws {
        console.error(
            "Offline: \(why). This is this machine's view only: the note's text now and the older texts its "
                + "local history kept (it keeps a text only when a save truncated or more than halved it, a "
                + "conflict replaced it, or the server refused it). Which machine made each is not known here.")
        let store = history.store
        var versions: [(when: String, what: String, text: Data?)] = []
        if let trashed = try store.admin.trash.entries().first(where: { $0.noteID == id }) {
            versions.append(("\(trashed.deletedAtText)", "deleted (\(trashed.origin.words))", nil))
            versions.append(("before that", "last text, \(trashed.size) bytes", try store.admin.trash.body(trashed.seq)))
        } else if let text = try? store.admin.contents(of: .note(id)) {
            versions.append(("now", "\(text.count) bytes", text))
        }
        for entry in try store.admin.history(for: id) {
            versions.append(
                ("until \(entry.savedAtText)", "\(entry.size) bytes, kept (\(entry.reason.words))",
                 try store.admin.historyBody(entry.seq)))
        }
        console.out("/\(path): this machine's view, newest first")
        for (index, version) in versions.enumerated() {
            var line = "\(version.when)  \(version.what)"
            if let text = version.text {
                let older = versions[(index + 1)...].first { $0.text != nil }?.text
                if let older {
                    let changes = LineChanges.between(old: older, new: text)
                    line += "  +\(changes.added) -\(changes.removed)"
                } else {
                    line += "  (oldest known here)"
                }
            }
            console.out(line)
        }
    }
}
