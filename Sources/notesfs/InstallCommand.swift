import Foundation

/// `notesfs install`: puts this binary on PATH with its manual page and
/// shell completion (scripts/run runs it after building).
struct InstallCommand: Command {
    static let name = "install"
    static let summary = "Put notesfs on your PATH with its manual page and shell completion"
    static let help = """
        Usage: notesfs install [--prefix DIR]

        Copies this notesfs binary to <prefix>/bin/notesfs and writes its manual
        page (<prefix>/share/man/man1/notesfs.1) and its bash, zsh and fish
        completion under <prefix>/share. Files already up to date are left as
        they are, and a running mount keeps working. Nothing is mounted or
        started; 'notesfs uninstall' removes what this wrote.
          --prefix DIR   install under DIR (default ~/.local, or /usr/local for root)
        """
    static let spec = ArgumentSpec(options: ["--prefix"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let layout = InstallLayout(prefix: arguments.option("--prefix") ?? InstallLayout.defaultPrefix)
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw CommandError.failed("cannot tell where this notesfs binary is (/proc/self/exe)")
        }
        var written: [String] = []
        if try InstallFiles.copy(executable, to: layout.binary, mode: 0o755) { written.append(layout.binary) }
        for file in layout.generatedFiles where try InstallFiles.write(Data(file.contents.utf8), to: file.path, mode: 0o644) {
            written.append(file.path)
        }
        if written.isEmpty {
            console.out("notesfs \(CommandLineTool.version) is installed under \(layout.prefix) (already up to date).")
        } else {
            console.out("Installed notesfs \(CommandLineTool.version) under \(layout.prefix):")
            for path in written { console.out("  " + path) }
        }
        for hint in hints(layout) { console.out(hint) }
        return 0
    }

    /// What a person may still have to do for `notesfs`, `man notesfs` and
    /// zsh completion to find the files.
    static func hints(_ layout: InstallLayout) -> [String] {
        var hints: [String] = []
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let bin = layout.prefix + "/bin"
        let home = ProcessInfo.processInfo.environment["HOME"].map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        if !path.contains(bin) {
            let atLogin = home.map { bin == $0 + "/.local/bin" } ?? false
            hints.append(
                "\(bin) is not on your PATH"
                    + (atLogin ? " yet (Debian's ~/.profile adds it at your next login)" : "")
                    + ". For this shell: export PATH=\"\(bin):$PATH\"")
        }
        let installed = { (program: String) in path.contains { access($0 + "/" + program, X_OK) == 0 } }
        if installed("zsh"), !["/usr/local", "/usr"].contains(layout.prefix) {
            hints.append(
                "zsh: for completion, add 'fpath+=(\(layout.prefix)/share/zsh/site-functions)' before compinit in ~/.zshrc")
        }
        // fish reads ~/.local/share/fish and the XDG_DATA_DIRS, which is
        // often unset outside a desktop session (fish then reads /usr/share only).
        let dataDirectories = (ProcessInfo.processInfo.environment["XDG_DATA_DIRS"] ?? "").split(separator: ":").map(String.init)
        if installed("fish"), layout.prefix != home.map({ $0 + "/.local" }), !dataDirectories.contains(layout.prefix + "/share") {
            hints.append("fish: for completion, set XDG_DATA_DIRS to include \(layout.prefix)/share (default /usr/local/share:/usr/share)")
        }
        return hints
    }
}
