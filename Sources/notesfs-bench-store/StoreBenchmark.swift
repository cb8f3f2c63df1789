import Foundation
import NotesModel
import NotesStore

/// Save-rate and search-latency measurements on an imported store.
enum StoreBenchmark {
    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static let usage = """
        usage: notesfs-bench-store saves  --db PATH [--count N]
               notesfs-bench-store search --db PATH --manifest FILE [--rounds N]
        """
    /// Notes the save benchmark cycles through.
    static let saveNotesCount = 100
    /// Bytes per small write (a FUSE write of a few typed lines).
    static let smallWriteBytes = 64

    static func main(_ arguments: [String]) throws -> Int32 {
        guard let mode = arguments.first else { throw UsageError(description: usage) }
        var options: [String: String] = [:]
        var index = 1
        while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
            options[arguments[index]] = arguments[index + 1]
            index += 2
        }
        guard index == arguments.count, let path = options["--db"] else { throw UsageError(description: usage) }
        let store = try NotesStore(path: path)
        switch mode {
        case "saves":
            try saves(store, count: Int(options["--count"] ?? "") ?? 20_000)
            return 0
        case "search":
            guard let manifest = options["--manifest"] else { throw UsageError(description: usage) }
            return try search(store, manifest: manifest, rounds: Int(options["--rounds"] ?? "") ?? 20)
        default:
            throw UsageError(description: usage)
        }
    }

    // MARK: Saves

    /// One transaction per call, `synchronous=NORMAL` (the store's default):
    /// small writes inside notes of about 1.5 KB, then whole-body replacements.
    static func saves(_ store: NotesStore, count: Int) throws {
        var notes: [NoteID] = []
        for index in 0..<saveNotesCount {
            let body = Data(String(repeating: "bench line \(index) café 日本 🙂\n", count: 48).utf8.prefix(1_536))
            notes.append(try store.admin.createNote(in: .root, title: "bench save \(index).md", body: body))
        }
        // Small writes at varying offsets in the first kilobyte (sizes stay put).
        var chunk = Data(repeating: UInt8(ascii: "a"), count: smallWriteBytes)
        let writeSeconds = try measure {
            for index in 0..<count {
                chunk[0] = UInt8(truncatingIfNeeded: index)
                chunk[1] = UInt8(truncatingIfNeeded: index >> 8)
                try store.tree.write(
                    .note(notes[index % notes.count]), offset: Int64((index * 37) % 1_024), bytes: chunk)
            }
        }
        print(String(format: "result save_write_per_s %.0f", Double(count) / writeSeconds))
        // Whole-body replacements of the same size.
        var body = Data(String(repeating: "replaced body line ü 中 ✅\n", count: 64).utf8.prefix(1_536))
        let replaceSeconds = try measure {
            for index in 0..<count {
                body[0] = UInt8(ascii: "a") + UInt8(index % 26)
                body[1] = UInt8(ascii: "a") + UInt8((index / 26) % 26)
                try store.admin.replaceBody(of: notes[index % notes.count], with: body)
            }
        }
        print(String(format: "result save_replace_per_s %.0f", Double(count) / replaceSeconds))
        let flushSeconds = try measure { try store.admin.flushSearchIndex() }
        print(String(format: "result save_index_flush_ms %.2f", flushSeconds * 1_000))
        try largeNote(store)
        largeMerge()
    }

    /// `cp` of a big file into the mount: a 16 MiB note arriving in 128 KiB writes.
    static func largeNote(_ store: NotesStore) throws {
        let pieceBytes = 128 << 10
        let pieces = (16 << 20) / pieceBytes
        let entry = try store.tree.createFile(in: .root, name: "bench large.txt")
        let piece = Data(String(repeating: "large note line ✅ 日本\n", count: pieceBytes / 8).utf8.prefix(pieceBytes))
        var slowest = 0.0
        let seconds = try measure {
            for index in 0..<pieces {
                let one = try measure {
                    try store.tree.write(entry.ref, offset: Int64(index * pieceBytes), bytes: piece)
                }
                slowest = max(slowest, one)
            }
        }
        print(String(format: "result large_write_mb_per_s %.1f", Double(pieces * pieceBytes) / 1e6 / seconds))
        print(String(format: "result large_write_slowest_ms %.1f", slowest * 1_000))
        let flushSeconds = try measure { try store.admin.flushSearchIndex() }
        print(String(format: "result large_index_flush_ms %.1f", flushSeconds * 1_000))
    }

    /// A three-way merge of a 16 MiB note (440,000 lines) whose sides made a
    /// few edits apart: the line diff must stay linear in the note's size.
    static func largeMerge() {
        let base = (0..<440_000).map { "line \($0): the quick brown fox jumps\n" }
        var local = base
        local[3] = "local edit near the top\n"
        local.insert("local line in the middle\n", at: 200_000)
        var remote = base
        remote[439_990] = "remote edit near the end\n"
        remote.remove(at: 100_000)
        let (baseData, localData, remoteData) = (
            Data(base.joined().utf8), Data(local.joined().utf8), Data(remote.joined().utf8)
        )
        var merged = false
        let seconds = measure {
            if case .merged = TextMerge.merge(base: baseData, local: localData, remote: remoteData) { merged = true }
        }
        print(String(format: "result merge_16mib_ms %.0f", seconds * 1_000) + (merged ? "" : " (clashed)"))
    }

    // MARK: Search

    struct Manifest: Decodable {
        struct Word: Decodable {
            var word: String
            var notes: Int
        }

        var searchWords: [Word]
        var rareTokens: [String: Int]
    }

    /// Latency of `search` (index check, title matches, FTS match, ranking,
    /// snippets, paths; up to 50 hits) over a spread of common to rare words,
    /// two-word queries, prefixes, quoted phrases and words within a folder.
    /// Returns 1 when a rare token's hit count differs from the manifest.
    static func search(_ store: NotesStore, manifest path: String, rounds: Int) throws -> Int32 {
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        var exitCode: Int32 = 0
        for (token, expected) in manifest.rareTokens.sorted(by: { $0.key < $1.key }) {
            let found = try store.admin.search(token, limit: 1_000).count
            if found != expected {
                FileHandle.standardError.write(Data("search '\(token)': \(found) notes, expected \(expected)\n".utf8))
                exitCode = 1
            }
        }
        let words = manifest.searchWords.map(\.word)
        var queries = words + manifest.rareTokens.keys.sorted()
        for (first, second) in zip(words, words.dropFirst(2)) { queries.append("\(first) \(second)") }
        queries.append("café")
        queries.append("日本語")
        // What people type beyond words: prefixes and quoted phrases.
        for word in words.prefix(5) where word.count > 4 { queries.append(String(word.prefix(4)) + "*") }
        for (first, second) in zip(words, words.dropFirst()).prefix(3) { queries.append("\"\(first) \(second)\"") }

        // Warm up (and bring the index up to date).
        for query in queries { _ = try store.admin.search(query) }
        var all: [Double] = []
        var perQuery: [String: [Double]] = [:]
        for _ in 0..<rounds {
            for query in queries {
                let seconds = try measure { _ = try store.admin.search(query) }
                all.append(seconds * 1_000)
                perQuery[query, default: []].append(seconds * 1_000)
            }
        }
        // The same words within the first folder (and the folders inside it).
        let folder = try store.tree.list(directory: .root).first { $0.kind == .directory }?.ref.directory
        var inFolder: [String] = []
        if let folder {
            inFolder = Array(words.prefix(4))
            for _ in 0..<rounds {
                for query in inFolder {
                    let seconds = try measure { _ = try store.admin.search(query, in: folder) }
                    all.append(seconds * 1_000)
                    perQuery["--in " + query, default: []].append(seconds * 1_000)
                }
            }
        }
        for query in inFolder {
            let times = perQuery["--in " + query] ?? []
            let timing = String(format: "p50=%.3fms max=%.3fms", percentile(times, 0.5), times.max() ?? 0)
            print("query '\(query)' --in first folder \(timing)")
        }
        for query in queries {
            let hits = try store.admin.search(query, limit: 100_000).count
            let times = perQuery[query] ?? []
            let timing = String(format: "p50=%.3fms max=%.3fms", percentile(times, 0.5), times.max() ?? 0)
            print("query '\(query)' hits=\(hits) \(timing)")
        }
        print("result search_queries \(all.count)")
        print(String(format: "result search_p50_ms %.3f", percentile(all, 0.5)))
        print(String(format: "result search_p99_ms %.3f", percentile(all, 0.99)))
        print(String(format: "result search_max_ms %.3f", all.max() ?? 0))
        return exitCode
    }

    // MARK: Helpers

    static func measure(_ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// The nearest-rank percentile of `values` (0 when empty).
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}
