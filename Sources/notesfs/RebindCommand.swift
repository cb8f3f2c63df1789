import Foundation
import NotesStore

/// `notesfs sync --rebind --server URL --token-file F`: moves a profile's
/// notes to another server or account (after losing a server, or moving to
/// a new account), keeping every id and text. The profile must not be
/// mounted: the change is made to the database and `sync.json` directly, and
/// the next mount sends everything.
enum Rebind {
    static func run(_ arguments: ParsedArguments, location: DataLocation, console: Console) throws -> Int32 {
        guard let server = arguments.option("--server"), let tokenFile = arguments.option("--token-file") else {
            throw CommandError.usage("--rebind needs --server URL and --token-file F (the new server and its token)")
        }
        guard location.exists else {
            throw CommandError.failed(
                "no notes database at \(location.directory.path): there is nothing to rebind. "
                    + "Mount it with --server and --token-file instead.")
        }
        do {
            try MountLock.checkFree(location.directory.path)
        } catch {
            throw CommandError.failed(
                "\(location.directory.path) is mounted (or another notesfs process uses it). Unmount it first "
                    + "(notesfs unmount <dir>), run this again, then mount it: the mount sends every note to the new server.")
        }
        let previous = try SyncProfile.load(location)
        let profile = SyncProfile(
            server: server, tokenFile: URL(fileURLWithPath: tokenFile).standardizedFileURL.path,
            deviceName: previous?.deviceName, caFile: previous?.caFile,
            insecureHTTP: arguments.has("--insecure-http") ? true : nil)
        let url = try profile.serverURL()
        let token = try profile.token()
        let store = try location.openStore(create: false)
        let state = try store.admin.syncState()
        let status = try store.admin.status()
        let binding = try store.admin.accountBinding()
        let from =
            state.serverURL.map { url in
                "\(url) (" + (binding.account.map { "the account of key \($0.dropFirst("account:".count))" }
                    ?? binding.tokenID.map { "the account of token \($0)" } ?? "no account yet") + ")"
            } ?? "no server"
        if !arguments.has("--yes") {
            let yes = try console.confirm(
                "Move the \(status.noteCount) notes of \(location.directory.path) from \(from) to "
                    + "\(url.absoluteString) (the account of token \(token.id))?\n"
                    + "Every note and folder is sent to the new server with its id; notes it already has merge, "
                    + "nothing is doubled or deleted.",
                withoutTerminal: "--rebind changes where every note syncs, so it asks first; on a terminal answer "
                    + "the question, elsewhere add --yes")
            guard yes else {
                console.out("Nothing changed.")
                return 1
            }
        }
        let report = try store.admin.rebindServer(url: url.absoluteString, tokenID: token.id)
        try profile.save(location)
        console.out(
            "Rebound to \(url.absoluteString): \(report.notes) notes and \(report.folders) folders will be sent "
                + "when the profile is next mounted.")
        return 0
    }
}
