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
        let store = try DataLocation(arguments).openStore(create: false)
        let status = try store.status()
        if arguments.has("--json") {
            FileHandle.standardOutput.write(status.json())
        } else {
            FileHandle.standardOutput.write(Data(status.humanText(nowNanoseconds: StoreClock.system.nowNanoseconds()).utf8))
        }
        return 0
    }
}
