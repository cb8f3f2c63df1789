/// The notesfs(1) manual page in roff, made from the same text `--help`
/// prints (the overview and every command's help, verbatim), so the two
/// cannot say different things.
enum ManPage {
    static func roff() -> String {
        var lines = [
            #".\" notesfs(1), made by 'notesfs manpage' from the text of 'notesfs --help'."#,
            #".TH NOTESFS 1 "" "notesfs \#(CommandLineTool.version)" "User Commands""#,
            ".SH NAME",
            #"notesfs \- \#(escaped(CommandLineTool.tagline))"#,
            ".SH SYNOPSIS",
            ".B notesfs",
            ".I command",
            ".RI [ options ]",
            ".br",
            #".B notesfs \-\-help"#,
            ".br",
            #".B notesfs \-\-version"#,
            ".SH DESCRIPTION",
        ]
        lines += [CommandLineTool.description.map(escaped).joined(separator: "\n")]
        lines += [".SH COMMANDS"]
        for command in CommandLineTool.commands {
            lines += [
                #".SS "notesfs \#(command.name)""#,
                escaped(command.summary) + ".",
            ]
            lines += preformatted(command.help)
        }
        lines += [".SH OPTIONS"] + preformatted(CommandLineTool.globalOptions.joined(separator: "\n"))
        lines += [".SH NOTES"] + preformatted(CommandLineTool.closing.joined(separator: "\n"))
        lines += [
            ".SH SEE ALSO",
            #".BR fusermount3 (1),"#,
            #".BR systemctl (1),"#,
            #".BR sqlite3 (1)"#,
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text kept line for line as the help shows it.
    static func preformatted(_ text: String) -> [String] {
        [".PP", ".nf", ".RS 2"] + text.split(separator: "\n", omittingEmptySubsequences: false).map { escaped(String($0)) }
            + [".RE", ".fi"]
    }

    /// Escapes one line of text for roff: backslashes, hyphens (so flags stay
    /// ASCII `-` and can be copied), and a leading `.` or `'` that roff would
    /// take for a request.
    static func escaped(_ line: String) -> String {
        var text = line.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if text.hasPrefix(".") || text.hasPrefix("'") { text = "\\&" + text }
        return text
    }
}
