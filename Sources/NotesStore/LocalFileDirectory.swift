import Foundation
import Synchronization

/// Why a local-only file's backing file could not be used: the POSIX call,
/// the file and the `errno` it set.
public struct LocalFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Operation: String, Sendable {
        case open, read, write, truncate, sync, remove, list, stat
        case makeDirectory = "make directory"
    }

    public var operation: Operation
    public var path: String
    public var code: Int32

    /// The disk (or the user's quota) is full.
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }

    public var description: String {
        "cannot \(operation.rawValue) the local-only file store \(path): \(String(cString: strerror(code)))"
    }
}

/// The directory beside the database (`<database>-local/`) that holds the
/// bytes of local-only regular files (`.git` objects, swap files), one file
/// per entry, named by the entry's `local_entries.file`. Reads and writes go
/// to the offset asked for, so a write costs its own size, not the file's.
///
/// Used only on the store's serial queue, inside or right after one
/// transaction. Each transaction's file changes are journalled so the files
/// and the rows never disagree in a way that loses bytes: a file is made
/// before the row naming it commits (a crash leaves an orphan, removed at the
/// next open), and removed only after the deletion of its row committed.
final class LocalFileDirectory: Sendable {
    /// The directory's path.
    let path: String
    private let journal = Mutex(Journal())
    private let written = Atomic<Int64>(0)
    /// The directory, held open with a shared `flock` while the store is
    /// open (-1 when it could not be opened); see `sweepIfAlone`.
    private let lockDescriptor = Mutex<Int32>(-1)

    private struct Journal {
        /// Files whose rows this transaction deleted: removed once it commits.
        var removeAfterCommit: [String] = []
        /// How to take this transaction's file changes back if it rolls back.
        var undo: [Undo] = []
    }

    private enum Undo {
        case remove(String)
        case truncate(String, size: Int64)
    }

    init(databasePath: String) {
        path = databasePath + "-local"
    }

    deinit {
        lockDescriptor.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
        }
    }

    /// Makes the directory when missing and runs `sweep` when no other store
    /// (another process, or another store object in this one) has it open;
    /// the directory then stays locked shared until this store goes. Another
    /// store's files may be made before their rows commit, so only a store
    /// alone may take files without rows for orphans. Returns whether `sweep` ran.
    @discardableResult
    func open(sweepIfAlone sweep: () throws -> Void) throws -> Bool {
        try ensureExists()
        let descriptor = try open(".", flags: O_RDONLY | O_DIRECTORY, operation: .open)
        lockDescriptor.withLock { $0 = descriptor }
        var alone = false
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                alone = true
                break
            }
            if errno == EINTR { continue }
            break
        }
        if alone { try sweep() }
        // Shared from here on (a conversion may briefly release the lock:
        // another opener may then sweep, before this store writes anything).
        while flock(descriptor, LOCK_SH) != 0 {
            if errno == EINTR { continue }
            throw LocalFileError(operation: .open, path: path, code: errno)
        }
        return alone
    }

    /// Bytes written to backing files since the store opened (tests bound a write's cost with it).
    var bytesWritten: Int64 { written.load(ordering: .relaxed) }

    /// A fresh file name (never reused, so an orphan can never be mistaken for a live entry's file).
    static func newName(_ uuid: UUID) -> String { uuid.uuidString.lowercased() }

    func filePath(_ name: String) -> String { path + "/" + name }

    // MARK: Transactions

    /// Records that `name` was made in this transaction (removed if it rolls back).
    func created(_ name: String) {
        journal.withLock { $0.undo.append(.remove(name)) }
    }

    /// Records that `name` grew from `size` in this transaction (cut back if it rolls back).
    /// Bytes overwritten inside the old size stay written, as after a failed `write(2)`.
    func extended(_ name: String, from size: Int64) {
        journal.withLock { $0.undo.append(.truncate(name, size: size)) }
    }

    /// Records that the row naming `name` was deleted: the file goes once that commits.
    func removeAfterCommit(_ name: String) {
        journal.withLock { $0.removeAfterCommit.append(name) }
    }

    /// Ends the transaction's journal: after a commit, removes the files of
    /// deleted rows; after a rollback, takes the file changes back. Failures
    /// leave orphans or stray tail bytes that the next open's sweep clears.
    func finishTransaction(committed: Bool) {
        let done = journal.withLock { state -> Journal in
            defer { state = Journal() }
            return state
        }
        if committed {
            for name in done.removeAfterCommit { try? remove(name) }
        } else {
            for step in done.undo.reversed() {
                switch step {
                case .remove(let name): try? remove(name)
                case .truncate(let name, let size): try? truncate(name, to: size)
                }
            }
        }
    }

    // MARK: The POSIX calls

    /// Makes the directory when missing.
    func ensureExists() throws(LocalFileError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw LocalFileError(operation: .makeDirectory, path: path, code: errno)
        }
    }

    private func open(_ name: String, flags: Int32, operation: LocalFileError.Operation) throws(LocalFileError)
        -> Int32
    {
        let file = filePath(name)
        while true {
            let descriptor = Glibc.open(file, flags | O_CLOEXEC, 0o600)
            if descriptor >= 0 { return descriptor }
            let code = errno
            if code == EINTR { continue }
            throw LocalFileError(operation: operation, path: file, code: code)
        }
    }

    /// Up to `count` bytes from `offset`; fewer at the end of the file, none when it is missing.
    func read(_ name: String, offset: Int64, count: Int) throws(LocalFileError) -> Data {
        guard count > 0 else { return Data() }
        let descriptor: Int32
        do {
            descriptor = try open(name, flags: O_RDONLY, operation: .read)
        } catch {
            if error.code == ENOENT { return Data() }
            throw error
        }
        defer { close(descriptor) }
        var data = Data(count: count)
        var done = 0
        var failure: Int32 = 0
        data.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while done < count {
                let got = pread(descriptor, base + done, count - done, off_t(offset) + off_t(done))
                if got < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                if got == 0 { return }
                done += got
            }
        }
        if failure != 0 { throw LocalFileError(operation: .read, path: filePath(name), code: failure) }
        if done < count { data.removeSubrange(done..<count) }
        return data
    }

    /// Writes `bytes` at `offset`, making the file when missing.
    func write(_ name: String, bytes: Data, at offset: Int64) throws(LocalFileError) {
        let descriptor = try open(name, flags: O_WRONLY | O_CREAT, operation: .write)
        defer { close(descriptor) }
        try write(descriptor, name: name, bytes: bytes, at: offset)
    }

    private func write(_ descriptor: Int32, name: String, bytes: Data, at offset: Int64) throws(LocalFileError) {
        var done = 0
        var failure: Int32 = 0
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while done < buffer.count {
                let put = pwrite(descriptor, base + done, buffer.count - done, off_t(offset) + off_t(done))
                if put < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                done += put
            }
        }
        written.add(Int64(done), ordering: .relaxed)
        if failure != 0 { throw LocalFileError(operation: .write, path: filePath(name), code: failure) }
    }

    /// Makes (or empties) `name` holding `bytes`; with `durable`, synced with
    /// its directory entry before returning (its bytes exist nowhere else).
    func create(_ name: String, bytes: Data, durable: Bool) throws(LocalFileError) {
        let descriptor = try open(name, flags: O_WRONLY | O_CREAT | O_TRUNC, operation: .write)
        defer { close(descriptor) }
        try write(descriptor, name: name, bytes: bytes, at: 0)
        if durable {
            if fsync(descriptor) != 0 { throw LocalFileError(operation: .sync, path: filePath(name), code: errno) }
            try syncDirectory()
        }
    }

    /// Sets the file's size (`ftruncate`), making it when missing.
    func truncate(_ name: String, to size: Int64) throws(LocalFileError) {
        let descriptor = try open(name, flags: O_WRONLY | O_CREAT, operation: .truncate)
        defer { close(descriptor) }
        while ftruncate(descriptor, off_t(size)) != 0 {
            if errno == EINTR { continue }
            throw LocalFileError(operation: .truncate, path: filePath(name), code: errno)
        }
    }

    /// Makes the file's bytes (and, with `directory`, its directory entry) survive power loss.
    func sync(_ name: String, dataOnly: Bool, directory: Bool = true) throws(LocalFileError) {
        let descriptor: Int32
        do {
            descriptor = try open(name, flags: O_RDONLY, operation: .sync)
        } catch {
            if error.code == ENOENT { return }
            throw error
        }
        defer { close(descriptor) }
        if (dataOnly ? fdatasync(descriptor) : fsync(descriptor)) != 0 {
            throw LocalFileError(operation: .sync, path: filePath(name), code: errno)
        }
        // The file may be new since the last sync: its name must last too.
        if directory { try syncDirectory() }
    }

    /// Makes the directory's entries (files made or removed) survive power loss.
    func syncDirectory() throws(LocalFileError) {
        let descriptor = try open(".", flags: O_RDONLY | O_DIRECTORY, operation: .sync)
        defer { close(descriptor) }
        if fsync(descriptor) != 0 { throw LocalFileError(operation: .sync, path: path, code: errno) }
    }

    /// The file's size, or nil when it is missing.
    func size(of name: String) throws(LocalFileError) -> Int64? {
        var info = stat()
        if stat(filePath(name), &info) != 0 {
            if errno == ENOENT { return nil }
            throw LocalFileError(operation: .stat, path: filePath(name), code: errno)
        }
        return Int64(info.st_size)
    }

    /// Removes the file; a missing one is not an error.
    func remove(_ name: String) throws(LocalFileError) {
        if unlink(filePath(name)) != 0 && errno != ENOENT {
            throw LocalFileError(operation: .remove, path: filePath(name), code: errno)
        }
    }

    /// The names of the files in the directory (none when it is missing).
    func names() throws(LocalFileError) -> [String] {
        guard let stream = opendir(path) else {
            if errno == ENOENT { return [] }
            throw LocalFileError(operation: .list, path: path, code: errno)
        }
        defer { closedir(stream) }
        var result: [String] = []
        while let item = readdir(stream) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { result.append(name) }
        }
        return result
    }
}
