import Foundation
import NotesStore

/// `notesfs sync`: asks the running mount to sync now.
struct SyncCommand: Command {
    static let name = "sync"
    static let summary = "Sync now (the mount syncs by itself; this asks it to do so at once)"
    static let help = """
        Usage: notesfs sync [--wait] [--allow-mass-delete] [--data DIR | --profile NAME]
               notesfs sync --rebind --server URL --token-file F [--yes] [--data DIR | --profile NAME]

        Asks the running mount of the profile to sync at once, through the
        control socket sync.sock in the data directory.
          --wait               wait for the run and print how it ended (on a terminal,
                               with a progress line: notes so far of the total, rate,
                               time left); exit 1 when it failed
          --allow-mass-delete  send deletions the mass-delete guard is holding (when you
                               really meant to delete more than half of your notes)
          --rebind             move the profile to another server or account (a new server
                               after losing the old one, or a new token): every note and
                               folder is kept with its id and sent to the new server at the
                               next mount; notes it already has merge, none is doubled.
                               Asks first (--yes skips the question). Unmount first.
        """
    static let spec = ArgumentSpec(
        options: DataLocation.options.union(["--server", "--token-file"]),
        flags: ["--wait", "--allow-mass-delete", "--wire-stats", "--rebind", "--yes"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let location = try DataLocation(arguments)
        if arguments.has("--rebind") { return try Rebind.run(arguments, location: location, console: console) }
        if arguments.option("--server") != nil || arguments.option("--token-file") != nil || arguments.has("--yes") {
            throw CommandError.usage("--server, --token-file and --yes go with --rebind")
        }
        let socket = SyncControlSocket.path(location)
        let notRunning = CommandError.failed(
            "no running mount syncs \(location.directory.path). Mount it first: "
                + "notesfs mount <dir> [--server URL --token-file F]")
        if arguments.has("--wire-stats") {
            var answer = ""
            guard SyncControlSocket.request(path: socket, "wire", onLine: { answer = $0 }) else { throw notRunning }
            console.out(answer)
            return 0
        }
        let wait = arguments.has("--wait")
        var words = ["sync"]
        if wait { words.append("wait") }
        if arguments.has("--allow-mass-delete") { words.append("allow-mass-delete") }
        let drawProgress = wait && console.isTerminal
        if drawProgress { words.append("progress") }
        var final: String?
        var drewProgress = false
        let reached = SyncControlSocket.request(path: socket, words.joined(separator: " ")) { line in
            if line.hasPrefix("progress ") {
                FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + line.dropFirst("progress ".count)).utf8))
                drewProgress = true
            } else {
                final = line
            }
        }
        if drewProgress { FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8)) }
        guard reached else { throw notRunning }
        switch final {
        case "started"?:
            console.out("Asked the mount to sync; 'notesfs status' shows how it went.")
            return 0
        case "ok"?:
            var summary = "Synced."
            if let status = try? location.openStore(create: false).status() {
                if status.heldTombstones > 0 {
                    summary += " \(status.heldTombstones) deletions are held: more than half of your notes. "
                        + "If you meant it, run: notesfs sync --allow-mass-delete"
                } else if status.pendingCount > 0 {
                    summary += " \(status.pendingCount) changes still wait (made during the sync)."
                }
            }
            console.out(summary)
            return 0
        case let line?:
            let reason = line.hasPrefix("failed ") ? String(line.dropFirst("failed ".count)) : line
            throw CommandError.failed("sync failed: \(reason). Your notes are safe locally; it retries by itself.")
        case nil:
            throw CommandError.failed("the mount closed the connection without an answer; see mount.log")
        }
    }
}
