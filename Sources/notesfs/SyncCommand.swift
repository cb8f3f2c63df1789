import Foundation
import NotesStore

/// `notesfs sync`: asks the running mount to sync now.
struct SyncCommand: Command {
    static let name = "sync"
    static let summary = "Sync now (the mount syncs by itself; this asks it to do so at once)"
    static let help = """
        Usage: notesfs sync [--wait] [--allow-mass-delete | --restore-held] [--data DIR | --profile NAME]
               notesfs sync --rebind --server URL --token-file F [--yes] [--insecure-http]
                            [--data DIR | --profile NAME]

        Asks the running mount of the profile to sync at once, through the
        control socket sync.sock in the data directory. A profile with no server
        (an offline notes folder) has nothing to sync: the command says so, and
        how to add a server.
          --wait               wait for the run and print how it ended (on a terminal,
                               with a progress line: notes so far of the total, rate,
                               time left)
          --allow-mass-delete  let the deletions the mass-delete guard holds go ahead, in
                               both directions (when you really meant to delete more than
                               half of your notes)
          --restore-held       cancel the held deletions instead: the notes come back here
                               and on your other machines
          --rebind             move the profile to another server or account (a new server
                               after losing the old one, or a new token): every note and
                               folder is kept with its id and sent to the new server at the
                               next mount; notes it already has merge, none is doubled.
                               Asks first (--yes skips the question). Unmount first.
          --insecure-http      with --rebind: allow a plain http:// server that is not on
                               this machine (see 'notesfs mount --help')

        The mass-delete guard holds deletions (sent and received) once more than
        half of your notes, and more than \(NotesStore.massDeleteHandful), were deleted within
        \(NotesStore.massDeleteWindowMinutes) minutes; 'notesfs status' says how many and why.
        Without a running mount, --allow-mass-delete and --restore-held change the
        notes database directly; the next mount sends the result.

        Exit codes: 0 synced; 1 failed (your notes are safe locally, it retries
        by itself); 2 usage error; \(heldExitCode) (with --wait) synced, but deletions are held,
        or notes that a write past the note size limit cut short are held back.
        """
    static let spec = ArgumentSpec(
        options: DataLocation.options.union(["--server", "--token-file"]),
        flags: ["--wait", "--allow-mass-delete", "--restore-held", "--wire-stats", "--rebind", "--yes", "--insecure-http"],
        hidden: ["--wire-stats"])

    /// What `sync` says for a profile with no server.
    static let noServer = """
        this notes folder has no server: its notes are kept only on this machine, so there is \
        nothing to sync. To sync it, make an account on a server ('notesfs account add NAME' there \
        prints a token), then unmount and mount again with --server URL --token-file FILE \
        (see 'notesfs mount --help'); every note is sent at that mount.
        """

    /// `sync --wait` exits with this while the mass-delete guard holds deletions.
    static let heldExitCode: Int32 = 3

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let location = try DataLocation(arguments)
        if arguments.has("--rebind") { return try Rebind.run(arguments, location: location, console: console) }
        if arguments.option("--server") != nil || arguments.option("--token-file") != nil || arguments.has("--yes")
            || arguments.has("--insecure-http")
        {
            throw CommandError.usage("--server, --token-file, --yes and --insecure-http go with --rebind")
        }
        if try SyncProfile.load(location) == nil {
            // An offline notes folder, mounted or not: there is no one to sync with.
            _ = try location.openStore(create: false)
            throw CommandError.failed(Self.noServer)
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
        let allow = arguments.has("--allow-mass-delete"), restore = arguments.has("--restore-held")
        if allow && restore { throw CommandError.usage("give either --allow-mass-delete or --restore-held, not both") }
        var words = ["sync"]
        if wait { words.append("wait") }
        if allow { words.append("allow-mass-delete") }
        if restore { words.append("restore-held") }
        let drawProgress = wait && console.isTerminal
        if drawProgress { words.append("progress") }
        var final: String?
        var drewProgress = false
        let reached = SyncControlSocket.request(path: socket, words.joined(separator: " ")) { line in
            if line.hasPrefix("progress ") {
                FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + line.dropFirst("progress ".count)).utf8))
                drewProgress = true
            } else if line.hasPrefix("note ") {
                console.out(String(line.dropFirst("note ".count)))
            } else {
                final = line
            }
        }
        if drewProgress { FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8)) }
        guard reached else {
            guard allow || restore else { throw notRunning }
            return try settleWithoutMount(location, allow: allow, console: console)
        }
        switch final {
        case "started"?:
            console.out("Asked the mount to sync; 'notesfs status' shows how it went.")
            return 0
        case "ok"?:
            var summary = "Synced."
            let status = try? location.openStore(create: false).admin.status()
            if let status, !status.heldForSize.isEmpty {
                let count = status.heldForSize.count
                console.error(
                    "Synced the other changes. \(count) note\(count == 1 ? " is" : "s are") held back: a write past "
                        + "the note size limit cut \(count == 1 ? "it" : "them") short (\(status.heldForSize.prefix(3).joined(separator: ", "))"
                        + "\(count > 3 ? ", …" : "")). Make \(count == 1 ? "it" : "them") smaller or delete \(count == 1 ? "it" : "them"); "
                        + "'notesfs status' lists them.")
                return heldExitCode
            }
            if let status, let waiting = status.waitingWords {
                summary += " \(waiting) still wait (changed during the sync)."
            }
            console.out(summary)
            return 0
        case let line? where line.hasPrefix("held "):
            console.error("Synced the other changes. " + line.dropFirst("held ".count))
            return heldExitCode
        case let line?:
            let reason = line.hasPrefix("failed ") ? String(line.dropFirst("failed ".count)) : line
            // Another account's token: retrying cannot help until the user acts.
            if reason.hasPrefix("sync is off: ") { throw CommandError.failed(reason + " Your notes are safe locally.") }
            // A reason may end in its own question mark ("is the URL right?").
            let sentence = reason.hasSuffix("?") || reason.hasSuffix(".") ? reason : reason + "."
            throw CommandError.failed("sync failed: \(sentence) Your notes are safe locally; it retries by itself.")
        case nil:
            throw CommandError.failed("the mount closed the connection without an answer; see mount.log")
        }
    }

    /// No mount is running: confirm or cancel in the database itself (as
    /// `notesfs restore` does); the next mount sends what that queued.
    private static func settleWithoutMount(_ location: DataLocation, allow: Bool, console: Console) throws -> Int32 {
        let store = try location.openStore(create: false)
        let admin = store.admin
        let summary = allow ? try admin.confirmMassDelete().summary : try admin.restoreHeldDeletions().summary
        console.out(summary + " No mount is running: the next mount syncs it.")
        return 0
    }
}
