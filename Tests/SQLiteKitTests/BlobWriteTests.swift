import Foundation
import SQLiteKit
import TestSupport
import Testing

/// `Connection.overwriteBlob`: bytes written into a stored blob in place.
@Suite struct BlobWriteTests {
    func table(_ directory: TemporaryDirectory) throws -> Connection {
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE pieces(id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
        try db.run("INSERT INTO pieces(id, data) VALUES (7, zeroblob(12000))")
        return db
    }

    @Test func bytesWrittenInPlaceReadBackAndTheBlobKeepsItsLength() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try table(directory)
        let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) })
        let wrote = try db.transaction {
            try db.overwriteBlob(
                table: "pieces", column: "data", rowID: 7, expectedByteCount: 12000, at: 5000, with: bytes)
        }
        #expect(wrote)
        let stored = try #require(try db.queryOne("SELECT data FROM pieces WHERE id = 7") { $0.data(0) })
        var expected = Data(count: 12000)
        expected.replaceSubrange(5000..<9096, with: bytes)
        #expect(stored == expected)
    }

    @Test func aSliceIsWrittenFromItsOwnBytes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try table(directory)
        let whole = Data((0..<100).map { UInt8($0) })
        let slice = whole[40..<60]
        #expect(try db.overwriteBlob(table: "pieces", column: "data", rowID: 7, expectedByteCount: 12000, at: 0, with: slice))
        let stored = try #require(try db.queryOne("SELECT substr(data, 1, 20) FROM pieces WHERE id = 7") { $0.data(0) })
        #expect(stored == Data(40..<60))
    }

    @Test func aBlobOfAnotherLengthIsLeftAsItIs() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try table(directory)
        #expect(
            try !db.overwriteBlob(
                table: "pieces", column: "data", rowID: 7, expectedByteCount: 8192, at: 0, with: Data([1, 2, 3])))
        #expect(try db.queryOne("SELECT data = zeroblob(12000) FROM pieces WHERE id = 7") { $0.bool(0) } == true)
    }

    @Test func aMissingRowOrARangePastTheEndIsAnError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try table(directory)
        #expect(throws: SQLiteError.self) {
            try db.overwriteBlob(table: "pieces", column: "data", rowID: 8, expectedByteCount: 12000, at: 0, with: Data([1]))
        }
        #expect(throws: SQLiteError.self) {
            try db.overwriteBlob(
                table: "pieces", column: "data", rowID: 7, expectedByteCount: 12000, at: 11999, with: Data([1, 2]))
        }
        #expect(try db.queryOne("SELECT data = zeroblob(12000) FROM pieces WHERE id = 7") { $0.bool(0) } == true)
    }
}
