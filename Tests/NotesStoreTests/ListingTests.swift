import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

/// Listings are kept in memory between readdirs; what a listing shows must
/// still be the database's, whoever changed it.
@Suite struct ListingTests {
    func shown(_ store: NotesStore, _ directory: DirectoryRef = .root) throws -> [String] {
        try store.list(directory: directory).map { "\($0.name) \($0.size)" }
    }

    @Test func aListingShowsEveryChangeThisStoreMakes() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "one"))
        #expect(try shown(store) == ["a.md 3"])
        #expect(try shown(store) == ["a.md 3"])
        try store.write(.note(note), offset: 3, bytes: Data(utf8: " two"))
        #expect(try shown(store) == ["a.md 7"])
        _ = try store.createFile(in: .root, name: "b.md")
        #expect(try shown(store) == ["a.md 7", "b.md 0"])
        _ = try store.rename(from: .root, name: "a.md", to: .root, newName: "c.md")
        #expect(try shown(store) == ["b.md 0", "c.md 7"])
        try store.removeFile(in: .root, name: "b.md")
        #expect(try shown(store) == ["c.md 7"])
    }

    @Test func aListingShowsWhatAnotherConnectionCommitted() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        _ = try store.createNote(in: .root, title: "a.md", body: Data(utf8: "one"))
        #expect(try shown(store) == ["a.md 3"])
        // Another process (say `notesfs restore`) writes the same file.
        let other = try NotesStore(path: fixture.databasePath)
        _ = try other.createNote(in: .root, title: "z.md", body: Data(utf8: "from elsewhere"))
        #expect(try shown(store) == ["a.md 3", "z.md 14"])
        let db = try Connection(path: fixture.databasePath)
        try db.run("UPDATE notes SET body = ? WHERE title = 'a.md'", Data(utf8: "changed by hand"))
        #expect(try shown(store) == ["a.md 15", "z.md 14"])
    }

    @Test func aListingReadInPagesContinuesAfterTheLastCookie() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        for index in 0..<30 { _ = try store.createFile(in: .root, name: String(format: "n%02d.md", index)) }
        var names: [String] = []
        var after: Int64 = 0
        var madeLate = false
        while true {
            let page = try store.list(directory: .root, afterCookie: after, limit: 7)
            guard let last = page.last else { break }
            names += page.map(\.name)
            after = last.cookie
            if !madeLate {
                _ = try store.createFile(in: .root, name: "late.md")
                madeLate = true
            }
        }
        // A name made during the listing has the highest cookie, so it still comes last.
        #expect(names == (0..<30).map { String(format: "n%02d.md", $0) } + ["late.md"])
    }

    @Test func aDirectoryTooLargeToKeepIsListedWholeInPages() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let count = ListingCache.entriesPerDirectoryMax + 5
        for index in 0..<count { _ = try store.createFile(in: .root, name: "f\(index).md") }
        var seen = 0
        var after: Int64 = 0
        // Twice: the second time the store knows the directory is too large to keep.
        for _ in 0..<2 {
            seen = 0
            after = 0
            while true {
                let page = try store.list(directory: .root, afterCookie: after, limit: 512)
                guard let last = page.last else { break }
                seen += page.count
                after = last.cookie
            }
            #expect(seen == count)
        }
    }
}
