import Foundation
import SQLiteKit
import TestSupport
import Testing

@Suite struct ConnectionTests {
    @Test func valuesOfEveryTypeRoundTrip() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, n)")
        let invalidUTF8 = Data([0xff, 0xfe, 0x00, 0x41])
        try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", Int64.max, 2.5, "héllo ∕ ␀", invalidUTF8, SQLValue.null)
        let row = try #require(
            try db.queryOne("SELECT i, r, s, b, n FROM t") { row in
                (row.int64(0), row.double(1), row.string(2), row.data(3), row.isNull(4))
            })
        #expect(row.0 == Int64.max)
        #expect(row.1 == 2.5)
        #expect(row.2 == "héllo ∕ ␀")
        #expect(row.3 == invalidUTF8)
        #expect(row.4)
    }

    @Test func syncingTheWriteAheadLogWritesNoTransaction() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("db.sqlite")
        let db = try Connection(path: path)
        try db.syncWriteAheadLog()  // nothing written yet: nothing to sync
        try db.execute("CREATE TABLE t(s TEXT)")
        try db.run("INSERT INTO t VALUES (?)", "kept")
        let walSize = { (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? nil }
        let before = try #require(walSize())
        #expect(before > 0)
        try db.syncWriteAheadLog()
        try db.syncWriteAheadLog()
        #expect(walSize() == before)
        let reader = try Connection(path: path, options: Connection.Options(mode: .readOnly))
        #expect(try reader.queryOne("SELECT s FROM t") { $0.string(0) } == "kept")
    }

    @Test func aLogExtendedWithZerosKeepsEveryCommitThroughACrash() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("db.sqlite")
        let db = try Connection(path: path)
        try db.execute("CREATE TABLE t(n INTEGER)")
        try db.run("INSERT INTO t VALUES (0)")
        #expect(throws: SQLiteError.self) { _ = try db.extendWriteAheadLog(toBytes: 1 << 20) }
        let walSize = { (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? nil }
        let before = try #require(walSize())
        let added = try db.transaction { try db.extendWriteAheadLog(toBytes: 1 << 20) }
        #expect(added == Int64(1 << 20 - before))
        #expect(walSize() == 1 << 20)
        #expect(try db.transaction { try db.extendWriteAheadLog(toBytes: 1 << 19) } == 0)
        for n in 1...50 { try db.run("INSERT INTO t VALUES (?)", n) }
        #expect(walSize() == 1 << 20, "commits overwrite the zeros instead of growing the file")

        // A crash: the files as they are, without the shared-memory index,
        // so SQLite rebuilds it by reading frames until the zeros begin.
        let copy = directory.file("copy.sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        let recovered = try Connection(path: copy)
        #expect(try recovered.query("SELECT n FROM t ORDER BY n") { $0.int(0) } == Array(0...50))
        #expect(try recovered.integrityCheck() == ["ok"])
    }

    @Test func textWithNULCharactersIsKeptWhole() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE t(s TEXT)")
        try db.run("INSERT INTO t VALUES (?), (?)", "a\u{0}b", "")
        #expect(try db.query("SELECT s FROM t") { $0.string(0) } == ["a\u{0}b", ""])
        #expect(try db.query("SELECT length(CAST(s AS BLOB)) FROM t") { $0.int(0) } == [3, 0])
    }

    @Test func anEmptyBlobIsNotNull() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE t(b BLOB)")
        try db.run("INSERT INTO t VALUES (?)", Data())
        let isNull = try db.queryOne("SELECT b IS NULL FROM t") { $0.bool(0) }
        #expect(isNull == false)
    }

    @Test func aThrowingTransactionLeavesNothingBehind() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE t(x)")
        struct Injected: Error {}
        #expect(throws: Injected.self) {
            try db.transaction {
                try db.run("INSERT INTO t VALUES (1)")
                throw Injected()
            }
        }
        #expect(try db.queryOne("SELECT count(*) FROM t") { $0.int(0) } == 0)
        #expect(!db.isInTransaction)
    }

    @Test func aNestedTransactionRollsBackOnlyItsOwnWork() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE t(x)")
        struct Injected: Error {}
        try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            _ = try? db.transaction {
                try db.run("INSERT INTO t VALUES (2)")
                throw Injected()
            }
        }
        #expect(try db.query("SELECT x FROM t") { $0.int(0) } == [1])
    }

    @Test func errorsCarryTheCodeTheMessageAndTheSQL() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE t(x UNIQUE)")
        try db.run("INSERT INTO t VALUES (1)")
        do {
            try db.run("INSERT INTO t VALUES (?)", 1)
            Issue.record("a duplicate insert should fail")
        } catch {
            #expect(error.isConstraint)
            #expect(error.message.contains("UNIQUE"))
            #expect(error.sql == "INSERT INTO t VALUES (?)")
        }
    }

    @Test func aFileThatIsNotADatabaseIsReportedAsCorrupt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("junk.sqlite")
        try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: path))
        do {
            _ = try Connection(path: path)
            Issue.record("opening junk should fail")
        } catch {
            #expect(error.isCorrupt)
        }
    }

    @Test func aReadOnlyConnectionCannotWrite() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("db.sqlite")
        do {
            let db = try Connection(path: path)
            try db.execute("CREATE TABLE t(x)")
        }
        let reader = try Connection(path: path, options: .init(mode: .readOnly))
        #expect(throws: SQLiteError.self) { try reader.run("INSERT INTO t VALUES (1)") }
    }

    @Test func theQueueRunsNestedUseInline() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let queue = try DatabaseQueue(path: directory.file("db.sqlite")) { db in
            try db.execute("CREATE TABLE t(x)")
        }
        try queue.write { db in
            try db.run("INSERT INTO t VALUES (1)")
            let count = try queue.sync { inner in try inner.queryOne("SELECT count(*) FROM t") { $0.int(0) } }
            #expect(count == 1)
        }
    }

    @Test func wrongParameterCountIsAnError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = try Connection(path: directory.file("db.sqlite"))
        try db.execute("CREATE TABLE t(x, y)")
        #expect(throws: SQLiteError.self) { try db.run("INSERT INTO t VALUES (?, ?)", 1) }
    }
}
