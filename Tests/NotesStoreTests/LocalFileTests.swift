import Foundation
import NotesModel
import SQLiteKit
import TestSupport
import Testing

@testable import NotesStore

/// Local-only regular files keep their bytes in their row while small, and
/// past `localInlineBytesMax` in backing files beside the database, written
/// at the offset asked for. The backing files' own tests use a store that
/// keeps no bytes in rows (`backingFilesOnly`).
@Suite struct LocalFileTests {
    /// A store whose every non-empty local file has a backing file.
    static var backingFilesOnly: StoreConfiguration {
        var configuration = StoreConfiguration()
        configuration.localInlineBytesMax = 0
        return configuration
    }

    /// The backing files there are now (names).
    static func backingFiles(_ store: NotesStore) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.localFilesPath).sorted()
    }

    static func storedBlobBytes(_ path: String) throws -> Int64 {
        try Connection(path: path).queryOne("SELECT COALESCE(sum(length(data)), 0) FROM local_entries WHERE type = 2") {
            $0.int64(0)
        } ?? -1
    }

    @Test func writesAtOffsetsReadBackAndTheBytesLiveOutsideTheDatabase() throws {
        let fixture = try StoreFixture(configuration: Self.backingFilesOnly)
        defer { fixture.remove() }
        let store = fixture.store
        let git = try #require(try store.makeDirectory(in: .root, name: ".git").ref.directory)
        let file = try store.createFile(in: git, name: "HEAD").ref
        #expect(try Self.backingFiles(store).isEmpty, "an empty file needs no backing file")

        try store.write(file, offset: 0, bytes: Data(utf8: "ref: refs/heads/main\n"))
        try store.write(file, offset: 5, bytes: Data(utf8: "REFS"))
        // Past the end: the gap reads as zeros.
        try store.write(file, offset: 30, bytes: Data(utf8: "tail"))
        let appended = try store.write(file, offset: 0, bytes: Data(utf8: "!"), append: true, view: nil)

        var expected = Data(utf8: "ref: REFS/heads/main\n")
        expected.append(Data(count: 30 - expected.count))
        expected.append(Data(utf8: "tail!"))
        #expect(appended.size == 35)
        #expect(try store.contents(of: file) == expected)
        #expect(try store.read(file, offset: 5, count: 4) == Data(utf8: "REFS"))
        #expect(try store.read(file, offset: 33, count: 100) == Data(utf8: "l!"))
        #expect(try store.read(file, offset: 100, count: 10).isEmpty)
        #expect(try store.entry(for: file)?.size == 35)
        #expect(try store.lookup(in: git, name: "HEAD")?.size == 35)
        #expect(try Self.storedBlobBytes(fixture.databasePath) == 0)
        let names = try Self.backingFiles(store)
        #expect(names.count == 1)
        #expect(FileManager.default.contents(atPath: store.localFilesPath + "/" + (names.first ?? "")) == expected)
    }

    @Test func truncationCutsAndZeroExtendsTheBackingFile() throws {
        let fixture = try StoreFixture(configuration: Self.backingFilesOnly)
        defer { fixture.remove() }
        let store = fixture.store
        let file = try store.createFile(in: .root, name: "build.tmp").ref
        try store.write(file, offset: 0, bytes: Data(utf8: "0123456789"))
        try store.truncate(file, to: 4)
        #expect(try store.contents(of: file) == Data(utf8: "0123"))
        try store.truncate(file, to: 6)
        #expect(try store.contents(of: file) == Data(utf8: "0123") + Data(count: 2))
        #expect(try store.entry(for: file)?.size == 6)
        try store.truncate(file, to: 0)
        #expect(try store.contents(of: file).isEmpty)
        #expect(try store.entry(for: file)?.size == 0)
    }

    @Test func renameOverUnlinkAndRmdirRemoveTheBackingFilesOfWhatWentAway() throws {
        let fixture = try StoreFixture(configuration: Self.backingFilesOnly)
        defer { fixture.remove() }
        let store = fixture.store
        let git = try #require(try store.makeDirectory(in: .root, name: ".git").ref.directory)
        let lock = try store.createFile(in: git, name: "index.lock").ref
        try store.write(lock, offset: 0, bytes: Data(utf8: "new index"))
        let index = try store.createFile(in: git, name: "index").ref
        try store.write(index, offset: 0, bytes: Data(utf8: "old index"))
        #expect(try Self.backingFiles(store).count == 2)

        let outcome = try store.rename(from: git, name: "index.lock", to: git, newName: "index")
        #expect(outcome.replaced == index)
        #expect(try store.contents(of: outcome.ref) == Data(utf8: "new index"))
        #expect(try Self.backingFiles(store).count == 1)

        let objects = try #require(try store.makeDirectory(in: git, name: "objects").ref.directory)
        let object = try store.createFile(in: objects, name: "ab12").ref
        try store.write(object, offset: 0, bytes: Data(utf8: "blob"))
        #expect(try Self.backingFiles(store).count == 2)
        try store.removeFile(in: objects, name: "ab12")
        try store.removeDirectory(in: git, name: "objects")
        try store.removeFile(in: git, name: "index")
        #expect(try Self.backingFiles(store).isEmpty)
    }

    @Test func aLocalDirectoryRenamedOverAnEmptyOneKeepsItsFilesBytes() throws {
        let fixture = try StoreFixture(configuration: Self.backingFilesOnly)
        defer { fixture.remove() }
        let store = fixture.store
        let old = try #require(try store.makeDirectory(in: .root, name: ".old").ref.directory)
        _ = try store.makeDirectory(in: .root, name: ".new")
        let kept = try store.createFile(in: old, name: "kept").ref
        try store.write(kept, offset: 0, bytes: Data(utf8: "kept bytes"))
        // `.old` replaces the empty `.new`; its file moves with it, untouched.
        _ = try store.rename(from: .root, name: ".old", to: .root, newName: ".new")
        let moved = try #require(try store.lookup(in: old, name: "kept"))
        #expect(try store.contents(of: moved.ref) == Data(utf8: "kept bytes"))
        #expect(try Self.backingFiles(store).count == 1)
    }

    @Test func aLocalFileRenamedToASyncedNameBecomesANoteWithItsBytes() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let temp = try store.createFile(in: .root, name: "draft.md.tmp").ref
        try store.write(temp, offset: 0, bytes: Data(utf8: "first line\n"))
        try store.write(temp, offset: 11, bytes: Data(utf8: "second line\n"))
        let outcome = try store.rename(from: .root, name: "draft.md.tmp", to: .root, newName: "draft.md")
        guard case .note = outcome.ref else { Issue.record("not a note: \(outcome.ref)"); return }
        #expect(try store.contents(of: outcome.ref) == Data(utf8: "first line\nsecond line\n"))
        #expect(try Self.backingFiles(store).isEmpty)

        // And over a live note: the note keeps its id and takes the bytes.
        let swap = try store.createFile(in: .root, name: "draft.md~").ref
        try store.write(swap, offset: 0, bytes: Data(utf8: "replaced\n"))
        let over = try store.rename(from: .root, name: "draft.md~", to: .root, newName: "draft.md")
        #expect(over.ref == outcome.ref)
        #expect(try store.contents(of: over.ref) == Data(utf8: "replaced\n"))
        #expect(try Self.backingFiles(store).isEmpty)
    }

    @Test func aNoteRenamedToALocalOnlyNameKeepsItsBytesInABackingFile() throws {
        let fixture = try StoreFixture(configuration: Self.backingFilesOnly)
        defer { fixture.remove() }
        let store = fixture.store
        _ = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "note text\n"))
        let outcome = try store.rename(from: .root, name: "n.md", to: .root, newName: "n.md~")
        #expect(try store.contents(of: outcome.ref) == Data(utf8: "note text\n"))
        #expect(try Self.backingFiles(store).count == 1)
        #expect(try Self.storedBlobBytes(fixture.databasePath) == 0)
    }

    @Test func openingTheStoreSweepsOrphansAndTakesEachFilesOwnSize() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        let localPath: String
        do {
            let store = try NotesStore(path: path, configuration: Self.backingFilesOnly)
            localPath = store.localFilesPath
            let file = try store.createFile(in: .root, name: "a.tmp").ref
            try store.write(file, offset: 0, bytes: Data(utf8: "0123456789"))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: localPath)
        let live = try #require(names.first)
        // As a kill -9 leaves them: a file made for a row that never
        // committed, and a write whose bytes landed before its row's size did.
        #expect(FileManager.default.createFile(atPath: localPath + "/orphan", contents: Data(utf8: "x")))
        let handle = try #require(FileHandle(forWritingAtPath: localPath + "/" + live))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(utf8: "AB"))
        try handle.close()
        // As when the first process has ended: the store is gone once no one
        // holds its directory (a background prune scheduled at open may keep
        // it a moment longer, and a store that is not alone never sweeps).
        #expect(try await waitUntil { Self.nobodyHoldsDirectory(localPath) }, "the first store let go")

        let store = try NotesStore(path: path, configuration: Self.backingFilesOnly)
        #expect(try FileManager.default.contentsOfDirectory(atPath: localPath) == [live])
        let entry = try #require(try store.lookup(in: .root, name: "a.tmp"))
        #expect(entry.size == 12)
        #expect(try store.contents(of: entry.ref) == Data(utf8: "0123456789AB"))
    }

    /// True when no store holds `path` (a store keeps its local-files directory locked while open).
    static func nobodyHoldsDirectory(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return false }
        flock(descriptor, LOCK_UN)
        return true
    }

    @Test func anotherStoreOpenOnTheSameDatabaseNeverSweepsFilesStillBeingMade() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        // A file whose row has not committed yet looks like an orphan.
        try FileManager.default.createDirectory(atPath: fixture.store.localFilesPath, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: fixture.store.localFilesPath + "/in-flight", contents: Data()))
        _ = try NotesStore(path: fixture.databasePath)
        #expect(try Self.backingFiles(fixture.store) == ["in-flight"])
    }

    @Test func version4BlobsMoveToBackingFilesOnceAndSurviveACrashMidMove() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("notes.sqlite")
        let big = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let seqs: [Int64]
        let localPath: String
        do {
            let store = try NotesStore(path: path)
            localPath = store.localFilesPath
            let git = try #require(try store.makeDirectory(in: .root, name: ".git").ref.directory)
            var made: [Int64] = []
            for name in ["pack", "HEAD", "empty"] {
                guard case .local(let seq) = try store.createFile(in: git, name: name).ref else { return }
                made.append(seq)
            }
            _ = try store.makeSymlink(in: .root, name: ".#lock", target: "user@host.1234")
            seqs = made
        }
        try SchemaTests.downgradeToVersion4(path)
        let db = try Connection(path: path)
        try db.run("UPDATE local_entries SET data = ? WHERE seq = ?", big, seqs[0])
        try db.run("UPDATE local_entries SET data = ? WHERE seq = ?", Data(utf8: "ref: refs/heads/main\n"), seqs[1])
        // A move that was killed before its rows committed left a file behind.
        #expect(FileManager.default.createFile(atPath: localPath + "/half-moved", contents: big.prefix(10)))

        for _ in 0..<2 {
            let store = try NotesStore(path: path)
            #expect(try Connection(path: path).userVersion == Schema.currentVersion)
            // The large blob moved out; the small one stays in its row.
            #expect(try Self.storedBlobBytes(path) == Int64("ref: refs/heads/main\n".utf8.count))
            #expect(try Self.backingFiles(store).count == 1)
            #expect(try store.contents(of: .local(seqs[0])) == big)
            #expect(try store.contents(of: .local(seqs[1])) == Data(utf8: "ref: refs/heads/main\n"))
            #expect(try store.contents(of: .local(seqs[2])).isEmpty)
            #expect(try store.entry(for: .local(seqs[0]))?.size == Int64(big.count))
            let link = try #require(try store.lookup(in: .root, name: ".#lock"))
            #expect(try store.readLink(link.ref) == "user@host.1234")
        }
    }

    @Test func aBlobLeftInTheDatabaseStillReadsAndMovesOutAtItsNextWrite() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        guard case .local(let seq) = try fixture.store.createFile(in: .root, name: "x.tmp").ref else { return }
        // Written the v4 way while this store has the directory (so no sweep moves it).
        try Connection(path: fixture.databasePath).run(
            "UPDATE local_entries SET data = ?, size = 5 WHERE seq = ?", Data(utf8: "hello"), seq)
        let other = try NotesStore(path: fixture.databasePath, configuration: Self.backingFilesOnly)
        #expect(try other.contents(of: .local(seq)) == Data(utf8: "hello"))
        try other.write(.local(seq), offset: 5, bytes: Data(utf8: " world"))
        #expect(try other.contents(of: .local(seq)) == Data(utf8: "hello world"))
        #expect(try Self.storedBlobBytes(fixture.databasePath) == 0)
    }

    @Test func aLocalFileWrittenIn4KiBPiecesIsNeverRewrittenWhole() throws {
        let fixture = try StoreFixture(configuration: Self.backingFilesOnly)
        defer { fixture.remove() }
        let store = fixture.store
        let git = try #require(try store.makeDirectory(in: .root, name: ".git").ref.directory)
        let pack = try store.createFile(in: git, name: "pack.tmp").ref
        let piece = Data(repeating: 0x5A, count: 4_096)
        let pieces = 1_024  // 4 MiB
        let writtenBefore = store.localFileBytesWritten
        let workBefore = store.databaseWork()
        for index in 0..<pieces {
            try store.write(pack, offset: Int64(index * piece.count), bytes: piece)
        }
        let work = store.databaseWork().since(workBefore)
        #expect(store.localFileBytesWritten - writtenBefore == Int64(pieces * piece.count))
        // Each write touches its row's page and the index pages, not the file's.
        #expect(work.pages / Int64(pieces) < 32, "\(work)")
        #expect(try store.entry(for: pack)?.size == Int64(pieces * piece.count))
        #expect(try Self.storedBlobBytes(fixture.databasePath) == 0)
    }

    @Test func aSmallLocalFileKeepsItsBytesInItsRowUntilItGrowsPastTheLimit() throws {
        var configuration = StoreConfiguration()
        configuration.localInlineBytesMax = 16
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let file = try store.createFile(in: .root, name: ".n.md.swp").ref
        try store.write(file, offset: 0, bytes: Data(utf8: "0123456789"))
        try store.write(file, offset: 12, bytes: Data(utf8: "AB"))
        try store.truncate(file, to: 13)
        try store.durableSync(of: file, dataOnly: true)
        let small = Data(utf8: "0123456789") + Data(count: 2) + Data(utf8: "A")
        #expect(try store.contents(of: file) == small)
        #expect(try store.read(file, offset: 9, count: 3) == Data(utf8: "9") + Data(count: 2))
        #expect(try store.entry(for: file)?.size == 13)
        #expect(try Self.backingFiles(store).isEmpty)
        #expect(try Self.storedBlobBytes(fixture.databasePath) == 13)

        // Past the limit: every byte moves to a backing file, and stays there
        // when the file shrinks again.
        try store.write(file, offset: 13, bytes: Data(utf8: "CDEFGH"))
        let grown = small + Data(utf8: "CDEFGH")
        #expect(try store.contents(of: file) == grown)
        #expect(try Self.backingFiles(store).count == 1)
        #expect(try Self.storedBlobBytes(fixture.databasePath) == 0)
        try store.truncate(file, to: 4)
        #expect(try store.contents(of: file) == Data(utf8: "0123"))
        #expect(try Self.backingFiles(store).count == 1)
        try store.removeFile(in: .root, name: ".n.md.swp")
        #expect(try Self.backingFiles(store).isEmpty)
    }

    @Test func aSmallTempFileRenamedOverANoteLeavesNoFileAndNoBytesBehind() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "n.md", body: Data(utf8: "old\n"))
        let temp = try store.createFile(in: .root, name: ".n.md.tmp").ref
        try store.write(temp, offset: 0, bytes: Data(utf8: "new\n"))
        try store.durableSync(of: temp, dataOnly: false)
        let outcome = try store.rename(from: .root, name: ".n.md.tmp", to: .root, newName: "n.md")
        #expect(outcome.ref == .note(note) && outcome.replaced == .note(note))
        #expect(try store.contents(of: .note(note)) == Data(utf8: "new\n"))
        #expect(try Self.backingFiles(store).isEmpty)
        #expect(try Self.storedBlobBytes(fixture.databasePath) == 0)
        // And back: a note renamed to a local-only name keeps its bytes in the row.
        _ = try store.rename(from: .root, name: "n.md", to: .root, newName: "n.md~")
        let backup = try #require(try store.lookup(in: .root, name: "n.md~"))
        #expect(try store.contents(of: backup.ref) == Data(utf8: "new\n"))
        #expect(try Self.backingFiles(store).isEmpty)
    }

    @Test func aFullDiskRefusesALocalWriteBeforeAnyByteIsStored() throws {
        let fixture = try StoreFixture(configuration: Self.backingFilesOnly)
        defer { fixture.remove() }
        let file = try fixture.store.createFile(in: .root, name: "a.tmp").ref
        try fixture.store.write(file, offset: 0, bytes: Data(utf8: "abc"))
        let before = fixture.store.localFileBytesWritten
        var configuration = StoreConfiguration()
        configuration.diskReserveBytes = Int64.max / 2
        let full = try NotesStore(path: fixture.databasePath, configuration: configuration)
        #expect(throws: StoreError.diskFull) { try full.write(file, offset: 3, bytes: Data(utf8: "def")) }
        #expect(throws: StoreError.diskFull) { try full.truncate(file, to: 1 << 20) }
        #expect(full.localFileBytesWritten == 0 && fixture.store.localFileBytesWritten == before)
        #expect(try fixture.store.contents(of: file) == Data(utf8: "abc"))
    }
}
