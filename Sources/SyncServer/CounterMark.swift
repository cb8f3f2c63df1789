import Foundation

/// A high-water mark of the server's counters, kept in a small file outside
/// the database, so a database put back from an older copy is noticed at
/// start even when nobody ran `notesfs server new-epoch`.
///
/// The mark is the sum of every account's counter. Counters only grow while
/// the database keeps its history (a new account adds, nothing subtracts), so
/// a database whose sum is below the mark has lost versions clients may hold.
/// The file is rewritten only now and then (never on the push path) and at a
/// clean stop; a copy taken in the last moments before a crash may go
/// unnoticed, which clients still survive (they never delete what the server
/// merely lacks).
public struct CounterMark: Sendable {
    /// The mark file.
    public let path: String

    public init(path: String) { self.path = path }

    /// The mark's file beside a SQLite server database.
    public static func path(besideDatabase databasePath: String) -> String {
        databasePath + ".counter-mark"
    }

    /// The recorded sum, or nil when there is no mark yet (a new server, or
    /// one from before marks existed).
    public func read() throws(CounterMarkError) -> Int64? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadable(path, "cannot read it")
        }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(Self.prefix) {
            if let total = Int64(line.dropFirst(Self.prefix.count)), total >= 0 { return total }
        }
        throw .unreadable(path, "it holds no '\(Self.prefix)N' line")
    }

    /// Records `total` durably: a temporary file, fsync, rename over the
    /// mark, fsync of the directory.
    public func write(_ total: Int64) throws(CounterMarkError) {
        let text = "# notesfs server counter mark: the database's counters summed to at least this.\n"
            + "\(Self.prefix)\(total)\n"
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unwritable(path, String(cString: strerror(errno))) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        let failure = String(cString: strerror(errno))
        close(fd)
        guard written == bytes.count, synced else {
            unlink(temporary)
            throw .unwritable(path, failure)
        }
        guard rename(temporary, path) == 0 else { throw .unwritable(path, String(cString: strerror(errno))) }
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    private static let prefix = "counter-sum-at-least "
}

/// Why the counter mark could not be read or written.
public enum CounterMarkError: Error, CustomStringConvertible, Sendable, Equatable {
    case unreadable(String, String)
    case unwritable(String, String)

    public var description: String {
        switch self {
        case .unreadable(let path, let why): "cannot read the counter mark \(path): \(why)"
        case .unwritable(let path, let why): "cannot write the counter mark \(path): \(why)"
        }
    }
}

/// Keeps a store and its counter mark in step: checks at start, records now
/// and then while serving, and at a clean stop.
public actor CounterMarkKeeper {
    let store: any ServerStore
    let mark: CounterMark
    private var recorded: Int64?

    public init(store: any ServerStore, mark: CounterMark) {
        self.store = store
        self.mark = mark
    }

    /// Compares the store with the mark. When the store is behind it (it was
    /// put back from an older copy), starts a new epoch as
    /// `notesfs server new-epoch` does, and says why in the returned line;
    /// nil when nothing was done. Records the store's sum either way.
    public func startNewEpochIfRestored(now: Date) async throws -> String? {
        let total = try await store.counterTotal()
        let marked = try mark.read()
        var message: String?
        if let marked, total < marked {
            let epoch = try await store.newEpoch(now: now)
            message =
                "the database's counters sum to \(total), below the \(marked) recorded in \(mark.path): "
                + "it was restored from an older copy, so a new epoch \(epoch) starts (as 'notesfs server new-epoch' "
                + "would); clients resync and send back what the copy lacks"
        }
        try await record()
        return message
    }

    /// Writes the store's current sum when it has grown since the last write.
    public func record() async throws {
        let total = try await store.counterTotal()
        if let recorded, total <= recorded { return }
        try mark.write(total)
        recorded = total
    }
}
