import Foundation

// A process started by Foundation's Process inherits a blocked signal mask,
// which would make the mount ignore SIGTERM (PLATFORM.md); clear it first.
SignalMask.clear()
exit(CommandLineTool.run(Array(CommandLine.arguments.dropFirst())))
