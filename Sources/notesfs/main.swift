import Foundation

// A process started by Foundation's Process inherits a blocked signal mask,
// which would make the mount ignore SIGTERM (PLATFORM.md); clear it first.
SignalMask.clear()
// Everything notesfs writes for itself (databases, logs, sockets, sync.json,
// the server's files) is private; `export` writes the user's own files and
// keeps the user's umask.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first != "export" { umask(0o077) }
exit(CommandLineTool.run(arguments))
