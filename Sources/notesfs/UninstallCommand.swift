import Foundation
import FuseKit
import NotesFS

/// `notesfs uninstall`: undoes `notesfs install` and `notesfs service
/// install`, and never touches a note.
struct UninstallCommand: Command {
    static let name = "uninstall"
    static let summary = "Remove notesfs, its services, manual page and completion (never your notes)"
    static let help = """
        Usage: notesfs uninstall [--prefix DIR]

        Stops and removes the systemd units notesfs wrote, unmounts the mounts of
        your profiles, and removes <prefix>/bin/notesfs, its manual page and its shell
        completion. Your notes and their data directories (~/.local/share/notesfs/)
        are never touched; the command says how to delete them if you want to.
          --prefix DIR   the prefix notesfs was installed under (default: the one
                         this binary runs from, else ~/.local, or /usr/local for root)
        """
    static let spec = ArgumentSpec(options: ["--prefix"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let layout = InstallLayout(prefix: arguments.option("--prefix") ?? installedPrefix() ?? InstallLayout.defaultPrefix)
        // A system-wide install (root, a prefix outside the home directory)
        // also owns the system server unit; a per-user one leaves it alone.
        let home = ServiceCommand.home
        let systemWide = geteuid() == 0 && !(home.map { layout.prefix == $0 || layout.prefix.hasPrefix($0 + "/") } ?? false)
        _ = ServiceCommand.removeAll(includingSystem: systemWide, console: console)
        // Your mounts are those of your profiles; a mount of a --data
        // directory elsewhere is someone's own arrangement and stays.
        let data = DataLocation.dataHome.appendingPathComponent("notesfs").standardizedFileURL.path
        var failed = false
        for mount in MountTable.mounts()
        where mount.fileSystemType.hasSuffix("notesfs") && mount.source.hasPrefix("notesfs:" + data + "/") {
            do {
                try UnmountCommand.unmount(mount, lazy: false)
                console.out("Unmounted \(mount.mountpoint).")
            } catch {
                failed = true
                console.error("notesfs: \(error)")
            }
        }
        // Keep the program while a mount remains, so 'notesfs unmount' still works.
        guard !failed else {
            throw CommandError.failed("nothing else was removed; unmount, then run 'notesfs uninstall' again")
        }
        var removed: [String] = []
        for path in layout.allPaths where try InstallFiles.remove(path) { removed.append(path) }
        if removed.isEmpty {
            console.out("Nothing of notesfs was installed under \(layout.prefix).")
        } else {
            console.out("Removed from \(layout.prefix):")
            for path in removed { console.out("  " + path) }
        }
        if FileManager.default.fileExists(atPath: data) {
            console.out("Your notes are still in \(data) (every profile, and server data if any). To delete them too: rm -rf '\(data)'")
        }
        return 0
    }

    /// The prefix this binary was installed under, when it runs from `<prefix>/bin/notesfs`.
    static func installedPrefix() -> String? {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            executable.hasSuffix("/bin/notesfs")
        else { return nil }
        let prefix = String(executable.dropLast("/bin/notesfs".count))
        return prefix.isEmpty ? nil : prefix
    }
}
