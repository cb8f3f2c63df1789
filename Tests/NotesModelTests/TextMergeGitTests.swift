import Foundation
import NotesModel
import ProcessKit
import TestSupport
import Testing

/// The insert cases of the merge against `git merge-file --union`, the
/// reference for "keep both sides' lines" (the server's side is git's "ours",
/// so its lines come first). Seeded: a failure names its seed; rerun it alone
/// with `NOTESFS_SEED=<seed>`.
@Suite struct TextMergeGitTests {
    /// A base of distinct lines and two sides that only insert lines of their
    /// own, some at the same points. git joins two clashes that are at most
    /// three lines apart into one (repeating the lines between them in a
    /// union), so points where both insert are at least four lines apart;
    /// everything else is drawn freely: CRLF or LF, a final newline or not.
    /// Except one place: git reads an append after a last line without a
    /// newline as a change of that line, so an insert just before that line
    /// clashes with it there (and the union repeats the line); this merge
    /// reads it as an insert after the line (`TextMergeTests`
    /// `aMissingFinalNewlineStaysMissing`), so that point is left out. And the
    /// line ending put after a side's unterminated last line is CRLF in git
    /// only when the base's first line ends with one too, so with CRLF and no
    /// final newline the base has two lines at least (this merge takes the
    /// text's own ending).
    struct Case {
        var base: Data
        var local: Data
        var remote: Data
        /// Points where both sides inserted.
        var sharedPoints = 0

        init(seed: UInt64) {
            var random = SplitMix64(seed: seed &+ 0x51_7CC1)
            let ending: [UInt8] = random.percent(25) ? [0x0D, 0x0A] : [0x0A]
            let finalNewline = random.percent(70)
            let fewestLines = ending.count == 2 && !finalNewline ? 2 : 0
            let baseLines = (0..<random.int(fewestLines..<14)).map { Array("s\(seed) base \($0)".utf8) }
            var (local, remote) = ([[UInt8]](), [[UInt8]]())
            var lastBoth = -10
            var shared = 0
            var counter = 0
            func inserted(_ side: String, _ random: inout SplitMix64) -> [[UInt8]] {
                (0..<random.int(1..<4)).map { _ in
                    counter += 1
                    // Now and then a line that is not UTF-8.
                    let line = Array("\(side) \(counter)".utf8)
                    return random.percent(10) ? line + [0xFF, 0xC3] : line
                }
            }
            for point in 0...baseLines.count {
                let beforeUnterminatedLastLine = !finalNewline && point == baseLines.count - 1
                switch beforeUnterminatedLastLine ? 5 : random.int(0..<6) {
                case 0: local += inserted("local", &random)
                case 1: remote += inserted("remote", &random)
                case 2, 3:
                    guard point - lastBoth >= 4 else { break }
                    local += inserted("local", &random)
                    remote += inserted("remote", &random)
                    lastBoth = point
                    shared += 1
                default: break
                }
                if point < baseLines.count {
                    local.append(baseLines[point])
                    remote.append(baseLines[point])
                }
            }
            func join(_ lines: [[UInt8]]) -> Data {
                var data = Data()
                for (index, line) in lines.enumerated() {
                    data.append(contentsOf: line)
                    if finalNewline || index < lines.count - 1 { data.append(contentsOf: ending) }
                }
                return data
            }
            (base, self.local, self.remote) = (join(baseLines), join(local), join(remote))
            sharedPoints = shared
        }
    }

    /// `git merge-file -p --union remote base local`, run in `directory`.
    static func gitUnion(_ example: Case, in directory: URL) throws -> Data {
        for (name, data) in [("remote", example.remote), ("base", example.base), ("local", example.local)] {
            try data.write(to: directory.appendingPathComponent(name))
        }
        let output = directory.appendingPathComponent("merged").path
        let pid = try ChildProcess.spawn(
            ["git", "merge-file", "-p", "--union", "remote", "base", "local"],
            .init(standardOutput: .file(output), standardError: .null, workingDirectory: directory.path))
        let status = ChildProcess.exitStatus(ChildProcess.wait(pid))
        guard status == 0 else { throw GitFailure(message: "git merge-file exited with \(status)") }
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }

    struct GitFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static var gitIsInstalled: Bool {
        ChildProcess.run(["git", "--version"], .init(standardOutput: .null, standardError: .null)) == 0
    }

    @Test func insertsMergeAsGitMergeFileUnionDoes() throws {
        guard Self.gitIsInstalled else {
            Issue.record("git is not installed: the merge cannot be compared with git merge-file --union")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "notesfs-merge-git-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var shared = 0
        for seed in Seeds.list(count: 200) {
            let example = Case(seed: seed)
            let expected = try Self.gitUnion(example, in: directory)
            let result = TextMerge.merge(base: example.base, local: example.local, remote: example.remote)
            #expect(
                result == .merged(expected),
                "seed \(seed): base \(example.base.debugText) local \(example.local.debugText) remote \(example.remote.debugText)"
            )
            if example.sharedPoints > 0 { shared += 1 }
        }
        // The generator must exercise inserts at one point on both sides, or the comparison says little.
        #expect(shared > 60, "\(shared) of 200 cases insert at one point on both sides")
    }
}

extension Data {
    /// The bytes as text for a failure message, with line endings visible.
    var debugText: String {
        String(decoding: self, as: UTF8.self).replacingOccurrences(of: "\r", with: "\\r")
            .replacingOccurrences(of: "\n", with: "\\n").debugDescription
    }
}
