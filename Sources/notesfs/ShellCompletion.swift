/// Shell completion scripts made from the table `--help` lists
/// (`CommandLineTool.commands` and each command's `ArgumentSpec`), so a new
/// command or flag completes as soon as it exists.
enum ShellCompletion {
    enum Shell: String, CaseIterable {
        case bash, zsh, fish
    }

    /// What the value after an option is, for completing it.
    enum ValueKind: Equatable {
        case directory, file, profile, text
    }

    static func valueKind(_ option: String) -> ValueKind {
        switch option {
        case "--data", "--mountpoint", "--prefix", "--to": .directory
        case "--profile": .profile
        case "--token-file", "--ca-file", "--tls-cert", "--tls-key", "--counter-mark", "--executable": .file
        default: .text
        }
    }

    /// One completable command: the words after `notesfs <name>`.
    struct Entry {
        let name: String
        let summary: String
        let options: [String]
        let flags: [String]
        let actions: [String]
    }

    static var entries: [Entry] {
        CommandLineTool.commands.map { command in
            Entry(
                name: command.name, summary: command.summary, options: command.spec.publicOptions,
                flags: command.spec.publicFlags + ["--help"], actions: command.spec.actions)
        }
    }

    /// What may follow `notesfs` itself.
    static let topLevelFlags = ["--help", "--version"]

    static func script(for shell: Shell) -> String {
        switch shell {
        case .bash: bash()
        case .zsh: zsh()
        case .fish: fish()
        }
    }

    // MARK: bash

    static func bash() -> String {
        let entries = entries
        var cases: [String] = []
        for entry in entries {
            cases.append(
                "        \(entry.name)) options=\"\(entry.options.joined(separator: " "))\"; "
                    + "flags=\"\(entry.flags.joined(separator: " "))\"; actions=\"\(entry.actions.joined(separator: " "))\" ;;")
        }
        let allOptions = Set(entries.flatMap(\.options))
        var valueCases: [String] = []
        for (kind, completion) in [
            (ValueKind.profile, #"COMPREPLY=($(compgen -W "$(_notesfs_profiles)" -- "$cur"))"#),
            (.directory, #"compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur"))"#),
            (.file, #"compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))"#),
        ] {
            let names = allOptions.filter { valueKind($0) == kind }.sorted()
            if !names.isEmpty { valueCases.append("            \(names.joined(separator: "|"))) \(completion) ;;") }
        }
        let words = (entries.map(\.name) + topLevelFlags).joined(separator: " ")
        return """
            # bash completion for notesfs \(CommandLineTool.version), made by 'notesfs completion bash'.
            # Commands and flags come from the table 'notesfs --help' shows.

            _notesfs_profiles() {
                local dir="${XDG_DATA_HOME:-$HOME/.local/share}/notesfs" database
                for database in "$dir"/*/notes.sqlite; do
                    [[ -e "$database" ]] || continue
                    database="${database%/notes.sqlite}"
                    printf '%s\\n' "${database##*/}"
                done
            }

            _notesfs() {
                local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
                local options="" flags="" actions="" word index seen=0
                COMPREPLY=()
                if (( COMP_CWORD == 1 )); then
                    COMPREPLY=($(compgen -W "\(words)" -- "$cur"))
                    return 0
                fi
                case "${COMP_WORDS[1]}" in
            \(cases.joined(separator: "\n"))
                    *) return 0 ;;
                esac
                if [[ " $options " == *" $prev "* ]]; then
                    case "$prev" in
            \(valueCases.joined(separator: "\n"))
                    esac
                    return 0
                fi
                if [[ "$cur" == -* ]]; then
                    COMPREPLY=($(compgen -W "$options $flags" -- "$cur"))
                    return 0
                fi
                if [[ -n "$actions" ]]; then
                    # Offer the actions only for the first word that is not an option or its value.
                    for (( index = 2; index < COMP_CWORD; index++ )); do
                        word="${COMP_WORDS[index]}"
                        if [[ " $options " == *" $word "* ]]; then
                            (( index++ ))
                        elif [[ "$word" != -* ]]; then
                            seen=1
                        fi
                    done
                    if (( seen == 0 )); then
                        COMPREPLY=($(compgen -W "$actions" -- "$cur"))
                    fi
                fi
                return 0
            }

            complete -o default -F _notesfs notesfs

            """
    }

    // MARK: zsh

    static func zsh() -> String {
        let entries = entries
        let commandLines = entries.map { "    '\(zshQuoted(zshEscapedColons($0.name))):\(zshQuoted($0.summary))'" }
        var cases: [String] = []
        for entry in entries {
            var specs: [String] = []
            for option in entry.options {
                let action: String
                switch valueKind(option) {
                case .directory: action = ":directory:_files -/"
                case .file: action = ":file:_files"
                case .profile: action = ":profile:_notesfs_profiles"
                case .text: action = ":value: "
                }
                specs.append("'\(option)=\(action)'")
            }
            for flag in entry.flags { specs.append("'\(flag)'") }
            if !entry.actions.isEmpty {
                specs.append("'1:action:(\(entry.actions.joined(separator: " ")))'")
            }
            specs.append("'*:file:_files'")
            cases.append("        \(entry.name))\n            _arguments -S \\\n                " + specs.joined(separator: " \\\n                ") + " ;;")
        }
        return """
            #compdef notesfs
            # zsh completion for notesfs \(CommandLineTool.version), made by 'notesfs completion zsh'.
            # Commands and flags come from the table 'notesfs --help' shows.

            _notesfs_profiles() {
                local dir="${XDG_DATA_HOME:-$HOME/.local/share}/notesfs"
                local -a profiles
                profiles=("$dir"/*/notes.sqlite(N:h:t))
                compadd -a profiles
            }

            _notesfs() {
                local -a commands
                commands=(
            \(commandLines.joined(separator: "\n"))
                )
                if (( CURRENT == 2 )); then
                    _describe -t commands 'notesfs command' commands
                    compadd -- \(topLevelFlags.joined(separator: " "))
                    return
                fi
                local command="${words[2]}"
                shift words
                (( CURRENT-- ))
                case "$command" in
            \(cases.joined(separator: "\n"))
                esac
            }

            if [[ "${funcstack[1]}" == "_notesfs" ]]; then
                _notesfs "$@"
            else
                compdef _notesfs notesfs
            fi

            """
    }

    static func zshEscapedColons(_ text: String) -> String {
        text.replacingOccurrences(of: ":", with: "\\:")
    }

    static func zshQuoted(_ text: String) -> String {
        text.replacingOccurrences(of: "'", with: "'\\''")
    }

    // MARK: fish

    static func fish() -> String {
        var lines = [
            "# fish completion for notesfs \(CommandLineTool.version), made by 'notesfs completion fish'.",
            "# Commands and flags come from the table 'notesfs --help' shows.",
            "",
            "function __notesfs_profiles",
            "    set -l data $HOME/.local/share",
            "    set -q XDG_DATA_HOME; and set data $XDG_DATA_HOME",
            "    for database in $data/notesfs/*/notes.sqlite",
            "        basename (dirname $database)",
            "    end",
            "end",
            "",
            "# True when the command line's first word after notesfs is $argv[1].",
            "function __notesfs_command",
            "    set -l words (commandline -opc)",
            "    test (count $words) -ge 2; and test \"$words[2]\" = \"$argv[1]\"",
            "end",
            "",
            "complete -c notesfs -n __fish_use_subcommand -f -l help -d 'Show the commands'",
            "complete -c notesfs -n __fish_use_subcommand -f -l version -d 'Print the version'",
        ]
        for entry in entries {
            lines.append("complete -c notesfs -n __fish_use_subcommand -f -a \(entry.name) -d '\(fishQuoted(entry.summary))'")
        }
        for entry in entries {
            lines.append("")
            let condition = "'__notesfs_command \(entry.name)'"
            for option in entry.options {
                let name = option.dropFirst(2)
                switch valueKind(option) {
                case .directory:
                    lines.append("complete -c notesfs -n \(condition) -l \(name) -x -a '(__fish_complete_directories)'")
                case .file:
                    lines.append("complete -c notesfs -n \(condition) -l \(name) -r -F")
                case .profile:
                    lines.append("complete -c notesfs -n \(condition) -l \(name) -x -a '(__notesfs_profiles)'")
                case .text:
                    lines.append("complete -c notesfs -n \(condition) -l \(name) -x")
                }
            }
            for flag in entry.flags {
                lines.append("complete -c notesfs -n \(condition) -l \(flag.dropFirst(2))")
            }
            if !entry.actions.isEmpty {
                let actions = entry.actions.joined(separator: " ")
                lines.append(
                    "complete -c notesfs -n \"__notesfs_command \(entry.name); and not __fish_seen_subcommand_from \(actions)\" "
                        + "-f -a '\(actions)'")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func fishQuoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }
}
