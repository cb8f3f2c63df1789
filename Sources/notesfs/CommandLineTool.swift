import Foundation

/// Dispatches `notesfs <command> ...` to the registered commands.
enum CommandLineTool {
    /// The version `--version`, the help, the man page and the logs show.
    static let version = "0.1.0"
    /// One line: what notesfs is (the help's first line, the man page's NAME).
    static let tagline = "your notes as plain files, synced between your machines"

    /// Every subcommand, in the order `--help` lists them. Add new commands here.
    static let commands: [any Command.Type] = [
        StatusCommand.self,
        SyncCommand.self,
        SearchCommand.self,
        ImportCommand.self,
        ExportCommand.self,
        RestoreCommand.self,
        TrashCommand.self,
        RevertCommand.self,
        ConflictsCommand.self,
        ServeCommand.self,
        AccountCommand.self,
        ServerCommand.self,
        MountCommand.self,
        UnmountCommand.self,
        ServiceCommand.self,
        InstallCommand.self,
        UninstallCommand.self,
        CompletionCommand.self,
        ManPageCommand.self,
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

    /// `notesfs --help`; the man page is made from this and each command's help.
    static var overview: String {
        var lines = [
            "notesfs \(version) — \(tagline).",
            "",
            "Usage: notesfs <command> [options]",
            "       notesfs --help | --version",
            "",
        ]
        lines += description + ["", "Commands:"]
        let width = (commands.map { $0.name.count }.max() ?? 8) + 2
        for command in commands {
            lines.append("  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.summary)
        }
        lines += ["", "Options:"] + globalOptions + [""] + closing
        return lines.joined(separator: "\n")
    }

    /// What notesfs does, in a few lines (the help and the man page's DESCRIPTION).
    static let description = [
        "Keeps your notes in a SQLite database on this machine and shows them as a",
        "directory tree: folders are directories, notes are text files, and any",
        "editor, grep, cp or rsync works on them. With a server ('notesfs serve'),",
        "a mount syncs every change with your other machines by itself.",
    ]

    static let globalOptions = [
        "  -h, --help     show this help (after a command: that command's help)",
        "  --version      print the version",
    ]

    /// The help's last lines: where data lives, exit codes, where to read more.
    static let closing = [
        "Data lives in $XDG_DATA_HOME/notesfs/<profile>/ (default profile 'default':",
        "~/.local/share/notesfs/default/); every command that opens it takes",
        "--profile NAME or --data DIR.",
        "Exit codes: 0 ok, 1 failed, 2 usage error, 3 deletions held by the mass-delete guard (sync --wait).",
        "Run 'notesfs <command> --help' for a command's options, or 'man notesfs'.",
    ]
}
