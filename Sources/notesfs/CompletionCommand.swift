/// `notesfs completion bash|zsh|fish`: prints a shell completion script.
struct CompletionCommand: Command {
    static let name = "completion"
    static let summary = "Print a completion script for bash, zsh or fish"
    static let help = """
        Usage: notesfs completion bash|zsh|fish

        Prints a script that completes notesfs's commands, their options, profile
        names and file names. 'notesfs install' puts it where each shell looks:
          bash  <prefix>/share/bash-completion/completions/notesfs
          zsh   <prefix>/share/zsh/site-functions/_notesfs
          fish  <prefix>/share/fish/vendor_completions.d/notesfs.fish
        To try it in the shell you are in: source <(notesfs completion bash)
        """
    static let spec = ArgumentSpec(positional: 1...1, actions: ShellCompletion.Shell.allCases.map(\.rawValue))

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        guard let shell = ShellCompletion.Shell(rawValue: arguments.positional[0]) else {
            throw CommandError.usage("no completion for '\(arguments.positional[0])'; use bash, zsh or fish")
        }
        console.out(ShellCompletion.script(for: shell), terminator: "")
        return 0
    }
}
