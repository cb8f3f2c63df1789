import Foundation
import Testing

/// The README is a user's front door: it starts with the two commands, stays
/// short, and every page it (or a page under docs/) links to exists. No page
/// cites files that are not in the repository.
@Suite struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// The markdown pages checked: the README and everything in docs/.
    static func pages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
    }

    /// Targets of inline markdown links, `[text](target)`.
    static func linkTargets(in text: String) -> [String] {
        var targets: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "](") {
            let after = rest[open.upperBound...]
            guard let close = after.firstIndex(of: ")") else { break }
            targets.append(String(after[..<close]))
            rest = after[close...]
        }
        return targets
    }

    @Test func theFirstFortyLinesGiveTheRunAndTestCommands() throws {
        let head = try Self.text("README.md").split(separator: "\n", omittingEmptySubsequences: false).prefix(40)
        #expect(head.contains { $0.contains("scripts/run") })
        #expect(head.contains { $0.contains("scripts/test") })
        for script in ["scripts/run", "scripts/test"] {
            #expect(FileManager.default.isExecutableFile(atPath: Self.root.appendingPathComponent(script).path), "\(script)")
        }
    }

    @Test func theReadmeIsAtMost250Lines() throws {
        let lines = try Self.text("README.md").split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 250, "README.md has \(lines) lines")
    }

    @Test func everyRelativeLinkResolves() throws {
        var broken: [String] = []
        for page in try Self.pages() {
            let directory = (page as NSString).deletingLastPathComponent
            for target in Self.linkTargets(in: try Self.text(page)) {
                if target.contains("://") || target.hasPrefix("mailto:") || target.hasPrefix("#") { continue }
                let path = String(target.split(separator: "#", maxSplits: 1).first ?? "")
                let resolved = Self.root.appendingPathComponent(directory).appendingPathComponent(path).standardized
                if !FileManager.default.fileExists(atPath: resolved.path) { broken.append("\(page): \(target)") }
            }
        }
        #expect(broken.isEmpty, "\(broken)")
    }

    @Test func noPageCitesFilesOutsideTheRepository() throws {
        var citing: [String] = []
        for page in try Self.pages() {
            let text = try Self.text(page)
            for outside in ["DESIGN.md", "PLATFORM.md", "shared/"] where text.contains(outside) {
                citing.append("\(page) cites \(outside)")
            }
        }
        #expect(citing.isEmpty, "\(citing)")
    }
}
