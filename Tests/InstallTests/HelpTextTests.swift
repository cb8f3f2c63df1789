import Foundation
import Testing
import TestSupport

/// The help, the manual page and the completion scripts come from one table
/// (the commands and their flags): these tests keep them saying the same.
@Suite struct HelpTextTests {
    /// The commands `notesfs --help` lists.
    static func commands(_ notesfs: String) throws -> [String] {
        let overview = try Programs.run([notesfs, "--help"]).lines
        guard let start = overview.firstIndex(of: "Commands:") else { return [] }
        return overview[(start + 1)...].prefix { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    static func help(_ notesfs: String, _ command: String) throws -> String {
        try Programs.run([notesfs, command, "--help"]).standardOutput
    }

    /// A line of help as the man page's roff writes it.
    static func roff(_ line: String) -> String {
        var text = line.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if text.hasPrefix(".") || text.hasPrefix("'") { text = "\\&" + text }
        return text
    }

    @Test func theManualPageHoldsTheOverviewAndEveryCommandsHelpLineForLine() throws {
        guard let notesfs = Programs.notesfs() else { return }
        let page = try Programs.run([notesfs, "manpage"]).standardOutput
        let pageLines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let version = try Programs.run([notesfs, "--version"]).standardOutput.trimmingCharacters(in: .newlines)
        #expect(page.contains(#".TH NOTESFS 1 "" "\#(version)""#))
        let commands = try Self.commands(notesfs)
        #expect(commands.count >= 16 && commands.contains("service") && commands.contains("mount"), "\(commands)")
        for command in commands {
            let help = try Self.help(notesfs, command)
            let expected = help.dropLast(help.hasSuffix("\n") ? 1 : 0).split(separator: "\n", omittingEmptySubsequences: false)
                .map { Self.roff(String($0)) }
            // The help, whole and in order, somewhere in the page.
            let found = pageLines.indices.contains { start in
                start + expected.count <= pageLines.count && Array(pageLines[start..<start + expected.count]) == expected
            }
            #expect(found, "the man page lacks the help of '\(command)' as 'notesfs \(command) --help' prints it")
        }
        // The overview's own lines (all but the command list, which the page has as sections).
        let overview = try Programs.run([notesfs, "--help"]).lines
        for line in overview where line.hasPrefix("  -") || line.hasPrefix("Data lives") || line.hasPrefix("Exit codes") {
            #expect(pageLines.contains(Self.roff(line)), "the man page lacks: \(line)")
        }
    }

    /// Every flag a command's completion offers is in its help (or the help
    /// it points to, as service does to serve's), and every flag its Usage
    /// lines show is offered.
    @Test func completionOffersWhatTheHelpDocumentsAndNothingElse() throws {
        guard let notesfs = Programs.notesfs() else { return }
        let commands = try Self.commands(notesfs)
        let fish = try Programs.run([notesfs, "completion", "fish"]).standardOutput
        let bash = try Programs.run([notesfs, "completion", "bash"]).standardOutput
        let zsh = try Programs.run([notesfs, "completion", "zsh"]).standardOutput
        for command in commands {
            #expect(fish.contains("-a \(command) -d"), "fish does not offer \(command)")
            #expect(bash.contains("        \(command)) options="), "bash does not know \(command)")
            #expect(zsh.contains("    '\(command):"), "zsh does not offer \(command)")

            let offered = Set(
                fish.split(separator: "\n").filter { $0.contains("-n '__notesfs_command \(command)'") }.compactMap { line -> String? in
                    guard let range = line.range(of: " -l ") else { return nil }
                    return "--" + (line[range.upperBound...].split(separator: " ").first.map(String.init) ?? "")
                })
            var documentation = try Self.help(notesfs, command)
            for match in documentation.matches(of: /'notesfs (\w+) --help'/) where match.1 != command {
                documentation += try Self.help(notesfs, String(match.1))
            }
            for flag in offered where flag != "--help" {
                #expect(documentation.contains(flag), "'notesfs \(command)' completes \(flag), which its help does not mention")
            }
            let usage = try Self.help(notesfs, command).split(separator: "\n", omittingEmptySubsequences: false)
                .prefix { !$0.isEmpty }.joined(separator: " ")
            for match in usage.matches(of: /--[a-z][a-z-]*/) {
                let flag = String(match.0)
                #expect(offered.contains(flag), "'notesfs \(command)' shows \(flag) in its usage but does not complete it")
            }
        }
    }

    @Test func everyTextTheProgramPrintsForPeopleEndsWithANewline() throws {
        guard let notesfs = Programs.notesfs() else { return }
        var outputs = [try Programs.run([notesfs, "--help"]), try Programs.run([notesfs, "--version"])]
        for command in try Self.commands(notesfs) { outputs.append(try Programs.run([notesfs, command, "--help"])) }
        for shell in ["bash", "zsh", "fish"] { outputs.append(try Programs.run([notesfs, "completion", shell])) }
        outputs.append(try Programs.run([notesfs, "manpage"]))
        for output in outputs {
            #expect(output.status == 0 && output.standardOutput.hasSuffix("\n") && !output.standardOutput.hasSuffix("\n\n\n"))
        }
    }
}
