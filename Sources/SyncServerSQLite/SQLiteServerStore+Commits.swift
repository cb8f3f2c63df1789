import NotesModel
import SyncServer
import SQLiteKit
import Synchronization

/// Where a SQLite store's `StoreCommit`s go, and what it last saw of the
/// database file's other writers.
///
/// Every push and epoch change goes through the store's one writer, which
/// reports it. Another connection writing the file (`notesfs account` in
/// its own process, a second store object) is seen through the write
/// connection's `PRAGMA data_version`, which moves only when another
/// connection committed: the writer thread looks every
/// `SQLiteServerStore.otherWritersCheckSeconds` and reports `.unknown`.
final class SQLiteCommitReports: Sendable {
    /// Kept inside a struct: a bare function value read back through
    /// `withLock { $0 }` is re-wrapped on every read (see `PostgresServerStore`).
    private struct Handler: Sendable {
        let call: @Sendable (StoreCommit) -> Void
    }

    private let handler = Mutex<Handler?>(nil)
    /// The write connection's `data_version` when last read; nil before the first read.
    private let dataVersion = Mutex<Int64?>(nil)

    func start(_ call: @escaping @Sendable (StoreCommit) -> Void) {
        handler.withLock { $0 = Handler(call: call) }
    }

    func report(_ commit: StoreCommit) {
        handler.withLock { $0 }?.call(commit)
    }

    /// Reads the write connection's `data_version` (on the writer's thread)
    /// and reports `.unknown` when another connection committed since the
    /// last read. A failed read reports too: it cannot tell.
    func checkOtherWriters(_ connection: Connection) {
        let version = try? connection.queryOne("PRAGMA data_version") { $0.int64(0) }
        let moved: Bool = dataVersion.withLock { seen in
            defer { seen = version }
            guard let previous = seen else { return false }
            return version == nil || version != previous
        }
        if moved { report(.unknown) }
    }
}

extension SQLiteServerStore: CommitReporting {
    /// Reports this store's pushes and epoch changes as they commit, and
    /// within `otherWritersCheckSeconds` any commit another connection made
    /// to the file.
    public func reportCommits(to handler: @escaping @Sendable (StoreCommit) -> Void) -> Bool {
        commitReports.start(handler)
        return true
    }

    /// How often the writer looks for commits made through other connections.
    public static let otherWritersCheckSeconds = 0.2
}
