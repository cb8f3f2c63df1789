import NotesModel
import Testing
import TestSupport

@Suite struct DisplayNamesTests {
    @Test(arguments: [
        ("todo.md", 2, "todo (2).md"),
        ("todo.md", 13, "todo (13).md"),
        (".bashrc", 2, ".bashrc (2)"),
        ("archive.tar.gz", 3, "archive.tar (3).gz"),
        ("README", 2, "README (2)"),
        ("Call mom. Then buy milk", 2, "Call mom. Then buy milk (2)"),
        ("notes.", 2, "notes. (2)"),
        ("..hidden", 2, "..hidden (2)"),
        (".config.json", 2, ".config (2).json"),
        ("Untitled", 2, "Untitled (2)"),
        ("v1.2 plan.md", 2, "v1.2 plan (2).md"),
    ])
    func theSuffixGoesBeforeTheLastExtension(name: String, number: Int, expected: String) {
        #expect(DisplayNames.suffixed(name, number: number) == expected)
    }

    @Test func suffixedNamesStayWithinTheLimit() {
        let name = String(repeating: "ü", count: 124) + ".md"  // 251 bytes
        let suffixed = DisplayNames.suffixed(name, number: 12)
        #expect(suffixed.utf8.count <= 255)
        #expect(suffixed.hasSuffix("ü (12).md"))
        #expect(NameCodec.isValidFileName(suffixed))
    }

    @Test func theBaseNameIsUsedWhenFree() {
        #expect(DisplayNames.lowestFree("todo.md") { _ in false } == "todo.md")
    }

    @Test(arguments: [
        (["todo.md"], "todo (2).md"),
        (["todo.md", "todo (2).md", "todo (3).md"], "todo (4).md"),
        (["todo.md", "todo (3).md"], "todo (2).md"),
        (["todo (2).md"], "todo.md"),
    ])
    func theLowestFreeSuffixIsTaken(taken: [String], expected: String) {
        #expect(DisplayNames.lowestFree("todo.md") { taken.contains($0) } == expected)
    }

    @Test func namesInOneFolderStayUnique() {
        for seed in Seeds.list(count: 50) {
            var random = SplitMix64(seed: seed)
            // Few distinct titles, many notes: most arrivals collide.
            let titles = (0..<4).map { _ in RandomText.title(&random) }
            var shown: Set<[UInt8]> = []
            for _ in 0..<60 {
                let base = NameCodec.displayName(forTitle: random.pick(titles), inRoot: random.percent(50))
                let name = DisplayNames.lowestFree(base) { shown.contains(Array($0.utf8)) }
                #expect(NameCodec.isValidFileName(name), "seed \(seed)")
                #expect(shown.insert(Array(name.utf8)).inserted, "seed \(seed): \(name) given twice")
            }
        }
    }
}
