import Foundation
import NotesStore

struct StatusCommand: Command {
    static let name = "status"
    static let summary = "Show sync status, pending changes, conflicts and refusals"
    static let help = """
        Usage: notesfs status [--json] [--data DIR | --profile NAME]

        Shows whether your notes are synced, how many changes wait to be sent and
        since when, the last sync outcome, conflict copies and refused changes.
          --json     machine-readable output
        """
    static let spec = ArgumentSpec(options: DataLocation.options, flags: ["--json"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let location = try DataLocation(arguments)
        let store = try location.openStore(create: false)
        let status = try store.status()
        // The running mount adds what only it knows: progress, the next retry.
        var live = ""
        _ = SyncControlSocket.request(path: SyncControlSocket.path(location), "status") { live = $0 }
        if arguments.has("--json") {
            FileHandle.standardOutput.write(status.json())
        } else {
            let text = status.humanText(nowNanoseconds: StoreClock.system.nowNanoseconds())
            FileHandle.standardOutput.write(Data((text + (live.isEmpty ? "" : live + "\n")).utf8))
        }
        return 0
    }
}
