import Foundation
import NotesModel
import NotesStore
import TestSupport
import Testing

@Suite struct StoreSmokeTests {
    @Test func aNoteCanBeCreatedWrittenAndReadBack() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try NotesStore(path: directory.file("notes.sqlite"))
        let entry = try store.createFile(in: .root, name: "todo.md")
        try store.write(entry.ref, offset: 0, bytes: Data("milk\n".utf8))
        #expect(try store.contents(of: entry.ref) == Data("milk\n".utf8))
        #expect(try store.lookup(in: .root, name: "todo.md")?.size == 5)
        #expect(try store.search("milk").map(\.path) == ["/todo.md"])
        #expect(try store.status().pendingCount == 1)
    }
}
