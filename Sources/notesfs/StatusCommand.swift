import Foundation
import NotesStore

struct StatusCommand: Command {
    static let name = "status"
    static let summary = "Show sync status, pending changes, conflicts and refusals"
    static let help = """
        Usage: notesfs status [--json] [--data DIR | --profile NAME]

        Shows whether your notes are synced: how many notes wait to be sent and
        since when, the first sync's progress, the last sync outcome, conflict
        copies, refused changes and the files kept only on this machine. An
        offline notes folder (no server) says so instead.
          --json     machine-readable output
        """
    static let spec = ArgumentSpec(options: DataLocation.options, flags: ["--json"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let location = try DataLocation(arguments)
        let store = try location.openStore(create: false)
        var status = try store.admin.status()
        // The running mount adds what only it knows: a run's progress, the next retry.
        _ = SyncControlSocket.request(path: SyncControlSocket.path(location), "status") { line in
            status.live = try? JSONDecoder().decode(LiveSync.self, from: Data(line.utf8))
        }
        if arguments.has("--json") {
            FileHandle.standardOutput.write(status.json())
        } else {
            FileHandle.standardOutput.write(Data(status.humanText(nowNanoseconds: StoreClock.system.nowNanoseconds()).utf8))
        }
        return 0
    }
}
