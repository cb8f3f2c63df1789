import Foundation

/// Dispatches `notesfs <command> ...` to the registered commands.
enum CommandLineTool {
    static let version = "0.1.0"

    /// Every subcommand, in the order `--help` lists them. Add new commands here.
    static let commands: [any Command.Type] = [
        StatusCommand.self,
        SyncCommand.self,
        SearchCommand.self,
        ImportCommand.self,
        ExportCommand.self,
        RestoreCommand.self,
        ConflictsCommand.self,
        ServeCommand.self,
        AccountCommand.self,
        ServerCommand.self,
        MountCommand.self,
        UnmountCommand.self,
    ]

    static func run(_ arguments: [String], console: Console = Console()) -> Int32 {
        guard let first = arguments.first else {
            console.error(overview)
            return 2
        }
        switch first {
        case "--help", "-h", "help":
            console.out(overview)
            return 0
        case "--version":
            console.out("notesfs \(version)")
            return 0
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            console.error("notesfs: unknown command '\(first)'. Run 'notesfs --help' for the list.")
            return 2
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            console.out(command.help)
            return 0
        }
        do {
            let parsed = try ParsedArguments(rest, spec: command.spec)
            return try command.run(parsed, console: console)
        } catch let error as CommandError {
            console.error("notesfs \(command.name): \(error)")
            if case .usage = error { console.error("Run 'notesfs \(command.name) --help' for usage.") }
            return error.exitCode
        } catch {
            console.error("notesfs \(command.name): \(UserFacingError.describe(error))")
            return 1
        }
    }

    static var overview: String {
        var lines = [
            "notesfs \(version) — your notes as plain files, synced between your machines.",
            "",
            "Usage: notesfs <command> [options]",
            "",
            "Commands:",
        ]
        let width = (commands.map { $0.name.count }.max() ?? 8) + 2
        for command in commands {
            lines.append("  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.summary)
        }
        lines += [
            "",
            "Run 'notesfs <command> --help' for a command's options.",
            "Exit codes: 0 ok, 1 failed, 2 usage error, 3 deletions held by the mass-delete guard (sync --wait).",
        ]
        return lines.joined(separator: "\n")
    }
}
