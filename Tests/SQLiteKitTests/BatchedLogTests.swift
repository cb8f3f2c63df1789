import Foundation
import SQLiteKit
import TestSupport
import Testing

/// The batching VFS (`CSQLiteBatchedLog`): a commit's pages reach the
/// write-ahead log in a couple of writes, and are all in the file when the
/// commit returns.
@Suite struct BatchedLogTests {
    /// Write system calls made by this thread so far (`/proc/thread-self/io`).
    static func writeCalls() throws -> Int {
        let text = try String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("syscw:") })
        return try #require(Int(line.dropFirst("syscw:".count).trimmingCharacters(in: .whitespaces)))
    }

    /// A transaction that changes about `pages` pages: one row of a page's worth of bytes each.
    static func commitPages(_ db: Connection, _ pages: Int, round: Int) throws {
        try db.transaction {
            for index in 0..<pages {
                try db.run(
                    "INSERT INTO t(round, n, body) VALUES (?, ?, ?)", round, index,
                    Data(repeating: UInt8(truncatingIfNeeded: round + index), count: 3_000))
            }
        }
    }

    /// The database as a crash leaves it: a copy of the file and its log,
    /// without the shared-memory index, opened (and so recovered) anew.
    static func afterACrash(_ path: String, in directory: TemporaryDirectory) throws -> Connection {
        let copy = directory.file("copy.sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        return try Connection(path: copy)
    }

    @Test func aCommitOfManyPagesIsAFewWrites() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for batched in [true, false] {
            let db = try Connection(
                path: directory.file("db-\(batched).sqlite"), options: Connection.Options(batchesLogWrites: batched))
            try db.execute("CREATE TABLE t(round INTEGER, n INTEGER, body BLOB)")
            try Self.commitPages(db, 20, round: 0)
            let before = try Self.writeCalls()
            try Self.commitPages(db, 20, round: 1)
            let writes = try Self.writeCalls() - before
            if batched {
                #expect(writes <= 4, "20 pages in \(writes) writes")
            } else {
                #expect(writes >= 40, "SQLite alone writes each page's header and page apart (\(writes) writes)")
            }
        }
    }

    @Test func everyCommitIsInTheFilesWhenItReturns() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("db.sqlite")
        let db = try Connection(path: path)
        try db.execute("CREATE TABLE t(round INTEGER, n INTEGER, body BLOB)")
        let reader = try Connection(path: path, options: Connection.Options(batchesLogWrites: false))
        for round in 1...30 {
            try Self.commitPages(db, round % 7 + 1, round: round)
            // Another connection sees the commit, page by page.
            let rows = try reader.query("SELECT n, body FROM t WHERE round = ?", round) { ($0.int(0), $0.data(1)) }
            #expect(rows.count == round % 7 + 1)
            for (index, body) in rows {
                #expect(body == Data(repeating: UInt8(truncatingIfNeeded: round + index), count: 3_000))
            }
        }
        let recovered = try Self.afterACrash(path, in: directory)
        #expect(try recovered.queryOne("SELECT count(*) FROM t") { $0.int(0) } == (1...30).reduce(0) { $0 + $1 % 7 + 1 })
        #expect(try recovered.integrityCheck() == ["ok"])
    }

    @Test func pagesRewrittenWithinATransactionLandInPlace() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("db.sqlite")
        let db = try Connection(path: path)
        // A tiny page cache spills pages to the log before the commit, and
        // later changes to them are written over their earlier frames.
        try db.execute("PRAGMA cache_size=2")
        try db.execute("CREATE TABLE t(round INTEGER, n INTEGER, body BLOB)")
        try Self.commitPages(db, 40, round: 0)
        try db.transaction {
            for pass in 1...3 {
                try db.run("UPDATE t SET round = ?, body = zeroblob(2000 + ?) WHERE n % 2 = 0", pass, pass)
            }
        }
        let reader = try Connection(path: path, options: Connection.Options(batchesLogWrites: false))
        #expect(try reader.queryOne("SELECT count(*) FROM t WHERE round = 3 AND length(body) = 2003") { $0.int(0) } == 20)
        let recovered = try Self.afterACrash(path, in: directory)
        #expect(try recovered.queryOne("SELECT count(*) FROM t WHERE round = 3") { $0.int(0) } == 20)
        #expect(try recovered.integrityCheck() == ["ok"])
    }
}
