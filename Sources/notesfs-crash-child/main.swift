import Foundation

// notesfs-crash-child: commits saves to a NotesStore in a loop until it is
// killed (CrashSafetyTests sends SIGKILL at seeded moments: after a number of
// reported saves, or while it waits inside a save's transaction), reporting
// each save on stdout only after the store call returned. See CrashChild.swift.
//
// Usage: notesfs-crash-child --db PATH --seed N --run K [--max-seconds S] [--stop-in-save N]
do {
    let options = try CrashChildOptions(Array(CommandLine.arguments.dropFirst()))
    try await CrashChild(options: options).run()
    exit(0)
} catch {
    FileHandle.standardError.write(Data("notesfs-crash-child: \(error)\n".utf8))
    exit(1)
}
