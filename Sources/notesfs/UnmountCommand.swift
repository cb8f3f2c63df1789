import Foundation
import FuseKit
import NotesFS
import ProcessKit

struct UnmountCommand: Command {
    static let name = "unmount"
    static let summary = "Stop showing your notes in a directory"
    static let help = """
        Usage: notesfs unmount <dir> [--lazy]

        Unmounts a notesfs mount and waits for its process to finish. Every
        write already returned is in the database; nothing is lost.
          --lazy   detach now even if files are open (the mount ends when they close)
        """
    static let spec = ArgumentSpec(flags: ["--lazy"], positional: 1...1)
    /// How long to wait for the mount process to finish after the unmount.
    static let exitWaitSeconds = 15.0

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        guard let directory = arguments.positional.first else { throw CommandError.usage("missing <dir>") }
        let path = URL(fileURLWithPath: directory).standardizedFileURL.path
        guard let mount = MountTable.mount(at: path) else { throw CommandError.failed("\(path) is not mounted") }
        guard mount.fileSystemType.hasSuffix("notesfs") else {
            throw CommandError.failed("\(path) is not a notesfs mount (\(mount.fileSystemType))")
        }
        try unmount(mount, lazy: arguments.has("--lazy"))
        console.out("Unmounted \(path).")
        return 0
    }

    /// Unmounts a notesfs mount and waits (a while) for its process to
    /// close the database.
    static func unmount(_ mount: MountTable.Mount, lazy: Bool) throws(CommandError) {
        let dataDirectory = mount.source.hasPrefix("notesfs:") ? String(mount.source.dropFirst(8)) : nil
        var command = ["fusermount3", "-u"]
        if lazy { command.append("-z") }
        command.append(mount.mountpoint)
        let status = runProgram(command)
        guard status == 0 else {
            throw .failed(
                "could not unmount \(mount.mountpoint) (is a file open in it, or a shell inside it?). "
                    + "Close it and retry, or use --lazy.")
        }
        if let dataDirectory {
            // The mount process holds the lock until it has closed the database.
            let deadline = Date().addingTimeInterval(exitWaitSeconds)
            while isLocked(dataDirectory) && Date() < deadline { usleep(10_000) }
        }
    }

    static func isLocked(_ dataDirectory: String) -> Bool {
        let descriptor = open(dataDirectory + "/mount.lock", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_SH | LOCK_NB) != 0
    }

    static func runProgram(_ arguments: [String]) -> Int32 {
        ChildProcess.run(arguments)
    }
}
