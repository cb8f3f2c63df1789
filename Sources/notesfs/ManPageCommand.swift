/// `notesfs manpage`: prints the notesfs(1) manual page in roff.
struct ManPageCommand: Command {
    static let name = "manpage"
    static let summary = "Print the manual page (roff), made from this help"
    static let help = """
        Usage: notesfs manpage

        Prints the notesfs(1) manual page, made from the text of 'notesfs --help'
        and of every command's --help. 'notesfs install' writes it to
        <prefix>/share/man/man1/notesfs.1; to read it without installing:
        notesfs manpage | man -l -
        """
    static let spec = ArgumentSpec()

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        console.out(ManPage.roff(), terminator: "")
        return 0
    }
}
