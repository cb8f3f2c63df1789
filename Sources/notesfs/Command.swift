import Foundation

/// One `notesfs` subcommand.
protocol Command: Sendable {
    /// The word after `notesfs`.
    static var name: String { get }
    /// One line for `notesfs --help`.
    static var summary: String { get }
    /// The full `--help` text.
    static var help: String { get }
    static var spec: ArgumentSpec { get }
    /// Runs the command and returns its exit code; throws `CommandError` on failure.
    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32
}

/// Where commands write: stdout for results, stderr for diagnostics.
struct Console: Sendable {
    func out(_ text: String, terminator: String = "\n") {
        FileHandle.standardOutput.write(Data((text + terminator).utf8))
    }

    func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// True when stdout is a terminal (progress lines are drawn only then).
    var isTerminal: Bool { isatty(STDOUT_FILENO) != 0 }

    /// Asks `question` on the terminal; true only for a yes. Without a
    /// terminal to answer on it fails with `withoutTerminal`, which should
    /// say why it asks and to add --yes.
    func confirm(_ question: String, withoutTerminal: String) throws(CommandError) -> Bool {
        guard isatty(STDIN_FILENO) != 0 else { throw .failed(withoutTerminal) }
        out(question + " [y/N] ", terminator: "")
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return answer == "y" || answer == "yes"
    }
}
