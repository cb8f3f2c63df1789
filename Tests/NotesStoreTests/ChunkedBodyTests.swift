import Foundation
import NotesModel
import SQLiteKit
import TestSupport
import Testing

@testable import NotesStore

/// Large notes keep their bodies in chunks, so a write costs what it touches:
/// the store's side of "16 MiB written in 4 KiB pieces runs in linear time".
@Suite struct ChunkedBodyTests {
    /// A store whose notes go to chunks past `threshold` bytes, in pieces of `chunk`.
    func fixture(threshold: Int = 64, chunk: Int = 16) throws -> StoreFixture {
        var configuration = StoreConfiguration()
        configuration.chunkedBodyThresholdBytes = threshold
        configuration.bodyChunkBytes = chunk
        return try StoreFixture(configuration: configuration)
    }

    func chunkBytes(_ store: NotesStore, _ id: NoteID) throws -> Int64 {
        try store.read { db in
            try db.queryOne("SELECT chunk_bytes FROM notes WHERE id = ?", id.description) { $0.int64(0) } ?? -1
        }
    }

    @Test func aLargeNoteWrittenInSmallPiecesWritesEachPieceOnceNotTheWholeNote() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "big.log", body: Data())
        let piece = 4 << 10
        let total = 4 << 20
        var expected = Data(capacity: total)
        let before = store.databaseWork()
        for index in 0..<(total / piece) {
            let bytes = Data(repeating: UInt8(truncatingIfNeeded: index % 251), count: piece)
            try store.write(.note(id), offset: Int64(expected.count), bytes: bytes)
            expected.append(bytes)
        }
        let written = store.databaseWork().since(before).pagesWritten * 4096
        #expect(try store.contents(of: .note(id)) == expected)
        // Rewriting the whole note per write would write about 2 GiB here
        // (1,024 writes of 2 MiB on average, measured: 133 MiB for 1 MiB);
        // in padded chunks of 8 KiB it writes about 32 MiB (the pages of
        // the chunk the write changed, the row and its index entries), the
        // first 256 KiB whole (45 MiB in unpadded chunks of 16 KiB).
        #expect(written < 96 << 20, "wrote \(written >> 20) MiB to the database for a 4 MiB note")
        #expect(try chunkBytes(store, id) > 0)
    }

    @Test func everyWriteAndTruncationReadsBackAsTheSameBytesAFileWouldHold() throws {
        let fixture = try fixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data(utf8: "start\n"))
        var model = Data(utf8: "start\n")
        var name = "n"
        let startSeed = Seeds.one(20_250_301)
        var random = SplitMix64(seed: startSeed)
        func next(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
        for step in 0..<400 {
            switch next(10) {
            case 0...4:
                let offset = next(model.count + 40)
                let bytes = Data((0..<(1 + next(50))).map { _ in UInt8(65 + next(26)) })
                try store.write(.note(id), offset: Int64(offset), bytes: bytes)
                if offset > model.count { model.append(Data(count: offset - model.count)) }
                if offset + bytes.count > model.count { model.append(Data(count: offset + bytes.count - model.count)) }
                model.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            case 5...6:
                let bytes = Data((0..<(1 + next(40))).map { _ in UInt8(97 + next(26)) })
                _ = try store.write(.note(id), offset: 0, bytes: bytes, append: true, view: nil)
                model.append(bytes)
            case 7...8:
                let size = next(model.count + 60)
                try store.truncate(.note(id), to: Int64(size))
                model = size <= model.count ? Data(model.prefix(size)) : model + Data(count: size - model.count)
            default:
                // A whole-body edit (a rename) stores the body whole again.
                let newName = "n\(step)"
                _ = try store.rename(from: .root, name: name, to: .root, newName: newName)
                name = newName
            }
            let offset = next(model.count + 1)
            let count = next(80)
            let expectedRange = Data(model[min(offset, model.count)..<min(model.count, offset + count)])
            #expect(
                try store.read(.note(id), offset: Int64(offset), count: count) == expectedRange,
                "\(Seeds.describe(startSeed)) step \(step)")
            #expect(try store.contents(of: .note(id)) == model, "\(Seeds.describe(startSeed)) step \(step)")
            #expect(try store.entry(for: .note(id))?.size == Int64(model.count), "\(Seeds.describe(startSeed)) step \(step)")
        }
    }

    @Test func aChunkedNoteIsFoundByItsWordsAndNoLongerByWordsItLost() throws {
        let fixture = try fixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data())
        try store.write(.note(id), offset: 0, bytes: Data(utf8: String(repeating: "filler ", count: 20) + "walrus\n"))
        #expect(try chunkBytes(store, id) > 0)
        #expect(try store.search("walrus").map(\.noteID) == [id])
        // Rewritten in place (still chunked): the old word leaves the index.
        try store.truncate(.note(id), to: 100)
        try store.write(.note(id), offset: 140, bytes: Data(utf8: "narwhal\n"))
        #expect(try chunkBytes(store, id) > 0)
        #expect(try store.search("walrus").isEmpty)
        #expect(try store.search("narwhal").map(\.noteID) == [id])
        // Stored whole again by a rename, then deleted: gone from the index.
        _ = try store.rename(from: .root, name: "n", to: .root, newName: "m")
        #expect(try chunkBytes(store, id) == 0)
        #expect(try store.search("narwhal").map(\.noteID) == [id])
        try store.removeFile(in: .root, name: "m")
        #expect(try store.search("narwhal").isEmpty)
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test func aChunkedNoteTravelsWhole() throws {
        let fixture = try fixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data())
        let text = Data(utf8: (1...30).map { "line \($0)" }.joined(separator: "\n") + "\n")
        for start in stride(from: 0, to: text.count, by: 7) {
            try store.write(.note(id), offset: Int64(start), bytes: text[start..<min(text.count, start + 7)])
        }
        #expect(try chunkBytes(store, id) > 0)
        let batch = try store.freezeBatch()
        #expect(batch.count == 1)
        #expect(batch.first?.note?.body == text)
    }

    @Test func cuttingAChunkedNoteKeepsWhatWasCutInTheHistory() throws {
        let fixture = try fixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data())
        let text = Data(utf8: String(repeating: "precious text\n", count: 20))
        try store.write(.note(id), offset: 0, bytes: text)
        #expect(try chunkBytes(store, id) > 0)
        // Halved but still chunked, then cut to nothing: both kept.
        try store.truncate(.note(id), to: 100)
        try store.truncate(.note(id), to: 0)
        let bodies = try store.history(for: id).map { try store.historyBody($0.seq) }
        #expect(bodies.contains(text))
        #expect(bodies.contains(Data(text.prefix(100))))
        #expect(try store.contents(of: .note(id)).isEmpty)
        #expect(try chunkBytes(store, id) == 0)
    }

    @Test func aPulledChangeReplacesAChunkedBodyWhole() throws {
        let fixture = try fixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data())
        try store.write(.note(id), offset: 0, bytes: Data(utf8: String(repeating: "local text\n", count: 10)))
        for change in try store.freezeBatch() { try store.settle(change.changeID, outcome: .applied(version: 1)) }
        let remote = Data(utf8: "remote\n")
        try store.applyPulled(
            [RemoteEntity(.note(id), version: 2, deleted: false,
                          note: NoteContent(title: "n", body: remote, folderID: nil))],
            cursor: "c2")
        #expect(try store.contents(of: .note(id)) == remote)
        #expect(try chunkBytes(store, id) == 0)
        let chunks = try store.read { db in try db.queryOne("SELECT count(*) FROM note_chunks") { $0.int(0) } ?? -1 }
        #expect(chunks == 0)
    }

    @Test func aWriteIntoAShortLastPieceFromBeforeThePaddingLandsAsInAFile() throws {
        let fixture = try fixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data())
        var model = Data(utf8: String(repeating: "0123456789", count: 10))
        try store.write(.note(id), offset: 0, bytes: model)
        #expect(try chunkBytes(store, id) == 16)
        // A store written before the padding: the last piece (bytes 96..<100) is 4 bytes long.
        try store.write(origin: .local) { db, _ in
            try db.run(
                "UPDATE note_chunks SET data = substr(data, 1, 4) WHERE idx = 6 AND note_seq = (SELECT seq FROM notes WHERE id = ?)",
                id.description)
        }
        // Inside that piece, and inside a full one: each lands where a file would put it.
        for (offset, text) in [(98, "ab"), (33, "xyz")] {
            let bytes = Data(utf8: text)
            try store.write(.note(id), offset: Int64(offset), bytes: bytes)
            model.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            #expect(try store.contents(of: .note(id)) == model)
        }
        let pieces = try store.read { db in
            try db.query("SELECT length(data) FROM note_chunks WHERE idx < 7 ORDER BY idx") { $0.int(0) }
        }
        #expect(pieces == Array(repeating: 16, count: 7))
    }

    /// The pieces of a note, in order: (index, bytes).
    func pieces(_ store: NotesStore, _ id: NoteID) throws -> [(Int64, Data)] {
        try store.read { db in
            try db.query(
                "SELECT idx, data FROM note_chunks WHERE note_seq = (SELECT seq FROM notes WHERE id = ?) ORDER BY idx",
                id.description
            ) { ($0.int64(0), $0.data(1)) }
        }
    }

    @Test func anAppendThatStartsAPieceAddsSparePiecesOfZerosThatLaterWritesFillAndACutRemoves() throws {
        let fixture = try fixture()
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data())
        var model = Data(utf8: String(repeating: "0123456789", count: 10))
        try store.write(.note(id), offset: 0, bytes: model)
        // Bytes 96..<100 start piece 6; pieces 7 ..< 7 + sparePieces follow, zeros.
        var stored = try pieces(store, id)
        #expect(stored.map(\.0) == Array(0..<(7 + NoteChunks.sparePieces)))
        #expect(stored.dropFirst(7).allSatisfy { $0.1 == Data(count: 16) })
        // Appends and a write past a gap go into the spare pieces; none is added while they last.
        for (offset, text) in [(100, "abcdefghijklmnop"), (140, "gap")] {
            let bytes = Data(utf8: text)
            try store.write(.note(id), offset: Int64(offset), bytes: bytes)
            if offset > model.count { model.append(Data(count: offset - model.count)) }
            model.append(bytes)
            #expect(try store.contents(of: .note(id)) == model)
        }
        stored = try pieces(store, id)
        #expect(stored.count == 7 + Int(NoteChunks.sparePieces))
        #expect(try store.entry(for: .note(id))?.size == Int64(model.count))
        // Growing by truncation reads the spare pieces' zeros; a cut removes every piece past the end.
        try store.truncate(.note(id), to: 200)
        model.append(Data(count: 200 - model.count))
        #expect(try store.contents(of: .note(id)) == model)
        try store.truncate(.note(id), to: 70)
        #expect(try store.contents(of: .note(id)) == model.prefix(70))
        #expect(try pieces(store, id).map(\.0) == Array(0..<5))
    }

    @Test func noSparePieceLiesPastTheSizeCap() throws {
        var configuration = StoreConfiguration()
        configuration.chunkedBodyThresholdBytes = 64
        configuration.bodyChunkBytes = 16
        configuration.noteSizeLimitBytes = 160
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let store = fixture.store
        let id = try store.createNote(in: .root, title: "n", body: Data())
        try store.write(.note(id), offset: 0, bytes: Data(repeating: 65, count: 100))
        // The cap is 10 pieces of 16 bytes: pieces 7 to 9 are spare, none after.
        #expect(try pieces(store, id).map(\.0) == Array(0..<10))
        try store.write(.note(id), offset: 100, bytes: Data(repeating: 66, count: 60))
        #expect(try store.contents(of: .note(id)) == Data(repeating: 65, count: 100) + Data(repeating: 66, count: 60))
    }
}
