import Foundation

// notesfs-bench-store: timings of a NotesStore that `notesfs import` filled.
// scripts/bench-store runs it; it prints `result <name> <value>` lines.
//
// Usage: notesfs-bench-store saves  --db PATH [--count N]
//        notesfs-bench-store search --db PATH --manifest FILE [--rounds N]
do {
    exit(try StoreBenchmark.main(Array(CommandLine.arguments.dropFirst())))
} catch {
    FileHandle.standardError.write(Data("notesfs-bench-store: \(error)\n".utf8))
    exit(1)
}
