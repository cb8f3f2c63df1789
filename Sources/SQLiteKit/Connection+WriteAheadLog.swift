import CSQLite

// The write-ahead log: syncing it, growing it ahead of commits, and
// checkpointing it into the database file.
extension Connection {
    /// Makes every transaction committed so far survive power loss by syncing
    /// the write-ahead log (what a `synchronous=FULL` commit does at its end),
    /// without writing a transaction of its own. Nothing to do when no log is open.
    public func syncWriteAheadLog() throws(SQLiteError) {
        guard let file = try writeAheadLogFile(), let sync = file.pointee.pMethods?.pointee.xSync else { return }
        let result = sync(file, SQLITE_SYNC_NORMAL)
        guard result == SQLITE_OK else {
            throw SQLiteError(code: result, message: "cannot sync the write-ahead log of \(path)")
        }
    }

    /// Appends zeros to the write-ahead log until it is `bytes` long, and syncs
    /// it, so later commits overwrite blocks the file already has: a
    /// `fdatasync` of a file that grew must also write its new size (~100 µs
    /// more per sync, measured on ext4). Call inside a write transaction, so
    /// no frame is appended meanwhile: the zeros lie past every frame, where
    /// SQLite's recovery stops reading. Returns the bytes added (0 when the
    /// log is that long already or none is open).
    public func extendWriteAheadLog(toBytes bytes: Int64) throws(SQLiteError) -> Int64 {
        guard isInTransaction else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "extendWriteAheadLog needs a write transaction")
        }
        guard let file = try writeAheadLogFile(), let methods = file.pointee.pMethods?.pointee,
            let fileSize = methods.xFileSize, let write = methods.xWrite, let sync = methods.xSync
        else { return 0 }
        var size: sqlite3_int64 = 0
        var result = fileSize(file, &size)
        guard result == SQLITE_OK else {
            throw SQLiteError(code: result, message: "cannot read the size of the write-ahead log of \(path)")
        }
        let start = Int64(size)
        guard start < bytes else { return 0 }
        // The unix VFS writes at most 128 KiB - 1 per call (it masks the count).
        let zeros = [UInt8](repeating: 0, count: 1 << 16)
        var offset = start
        while offset < bytes {
            let count = Int32(min(Int64(zeros.count), bytes - offset))
            result = zeros.withUnsafeBytes { write(file, $0.baseAddress, count, sqlite3_int64(offset)) }
            guard result == SQLITE_OK else {
                throw SQLiteError(code: result, message: "cannot extend the write-ahead log of \(path)")
            }
            offset += Int64(count)
        }
        result = sync(file, SQLITE_SYNC_NORMAL)
        guard result == SQLITE_OK else {
            throw SQLiteError(code: result, message: "cannot sync the write-ahead log of \(path)")
        }
        return bytes - start
    }

    /// SQLite's handle on the write-ahead log; nil when none is open.
    fileprivate func writeAheadLogFile() throws(SQLiteError) -> UnsafeMutablePointer<sqlite3_file>? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        let code = sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file)
        guard code == SQLITE_OK else { throw error(code: code, sql: nil) }
        // A file without methods is one SQLite has not opened.
        guard let file, file.pointee.pMethods != nil else { return nil }
        return file
    }

    /// Copies every page of the write-ahead log into the database file, syncs
    /// it and truncates the log (`PRAGMA wal_checkpoint(TRUNCATE)`). Returns
    /// false when another connection's read kept part of the log in use, so
    /// the log still holds commits the database file lacks.
    public func checkpointAndTruncateLog() throws(SQLiteError) -> Bool {
        let busy = try queryOne("PRAGMA wal_checkpoint(TRUNCATE)") { $0.int(0) }
        return busy == 0
    }

    /// Copies what it can of the write-ahead log into the database file
    /// without waiting for readers or writers (`PRAGMA wal_checkpoint(PASSIVE)`).
    /// Returns true when the whole log was copied (the database file then
    /// also shrinks to its page count).
    public func checkpointPassively() throws(SQLiteError) -> Bool {
        let result = try queryOne("PRAGMA wal_checkpoint(PASSIVE)") { ($0.int(0), $0.int(1), $0.int(2)) }
        guard let (busy, logFrames, copied) = result else { return true }
        return busy == 0 && logFrames == copied
    }
}
