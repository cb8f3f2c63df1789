import Foundation
import NotesModel
import SQLiteKit
import Synchronization

/// The client database: the source of truth for one mount profile. This is
/// the shared core; its operations are internal, and the mount, the engine
/// and the command reach them through their own faces (`tree`, `replica`,
/// `admin`). Every operation is one SQLite transaction that writes the
/// visible rows and their outbox row together, or nothing.
///
/// `@unchecked Sendable`: the connection is only used through `DatabaseQueue`
/// (one serial queue), and the observer list is behind a `Mutex`.
public final class NotesStore: @unchecked Sendable {
    let queue: DatabaseQueue
    let configuration: StoreConfiguration
    private let observers = Mutex<[Int: @Sendable (StoreCommit) -> Void]>([:])
    private let nextObserverID = Atomic<Int>(0)
    /// The last free-space answer (monotonic time, free bytes); see `ensureFreeSpace`.
    private let freeSpaceCheck = Mutex<(checkedAt: UInt64, freeBytes: Int64)?>(nil)
    private let directoryPath: String
    /// Whole listings kept while the database is unchanged (warm walks).
    let listingCache = ListingCache()
    /// Prunes the local history off the save path.
    let historyPruner = HistoryPruner()
    /// True when freed pages can be given back to the file system (`auto_vacuum=INCREMENTAL`).
    let incrementalVacuum: Bool
    /// Text replaced behind the kernel's back, for judging writes made through older views.
    let kernelViews = KernelViewLedger()
    /// When this store was opened; the root directory's times.
    let openedNanoseconds: Int64
    /// The bytes of local-only regular files, beside the database.
    let localFiles: LocalFileDirectory
    /// The server's history period in seconds as it last told it (0: none
    /// did); the trash keeps notes as long (NotesStore+TrashPeriod.swift).
    let serverHistorySeconds = Atomic<Int64>(0)

    /// The database file's path.
    public var path: String { queue.path }

    /// Opens (creating when missing) the database at `path` and migrates it forward.
    public init(path: String, configuration: StoreConfiguration = StoreConfiguration()) throws(StoreError) {
        self.configuration = configuration
        self.directoryPath = (path as NSString).deletingLastPathComponent
        self.openedNanoseconds = configuration.clock.nowNanoseconds()
        var incrementalVacuum = false
        var serverHistorySeconds: Int64 = 0
        let directoryPath = (path as NSString).deletingLastPathComponent
        let localFiles = LocalFileDirectory(databasePath: path)
        self.localFiles = localFiles
        queue = try StoreError.wrap {
            try DatabaseQueue(path: path, label: "notesfs.store") { db in
                try db.execute("PRAGMA wal_autocheckpoint=\(Self.walCheckpointPages)")
                try db.execute("PRAGMA journal_size_limit=\(Self.walSizeLimitBytes)")
                try db.execute("PRAGMA secure_delete=\(Self.secureDelete)")
                let fresh = try db.userVersion == 0
                try Schema.migrate(db)
                try NotesStore.ensureSyncState(db, configuration: configuration)
                serverHistorySeconds = try Self.storedServerHistorySeconds(db)
                try localFiles.open {
                    try Self.sweepLocalFiles(
                        db, localFiles, inlineBytesMax: configuration.localInlineBytesMax,
                        newUUID: configuration.newUUID)
                }
                // A new database is converted at once (nothing to copy); an
                // older one by the store that prunes (the mount), not by
                // every short command that opens it.
                if fresh || configuration.historyPruning == .background {
                    incrementalVacuum = try Self.enableIncrementalVacuum(
                        db, freeBytes: Self.freeDiskBytes(in: directoryPath), reserve: configuration.diskReserveBytes)
                } else {
                    incrementalVacuum = try db.queryOne("PRAGMA auto_vacuum") { $0.int(0) } == 2
                }
            }
        }
        self.incrementalVacuum = incrementalVacuum
        self.serverHistorySeconds.store(serverHistorySeconds, ordering: .relaxed)
        if configuration.historyPruning == .background {
            historyPruner.attach { [weak self] in
                // A failed run leaves the history as it was; the next save
                // past the cap, or the next open, starts another.
                try? self?.pruneHistory()
            }
            // Entries may have aged past the retention while unmounted.
            historyPruner.schedule()
        }
    }

    /// Deleted content is zeroed only where SQLite writes the page anyway
    /// (`secure_delete=FAST`), for every table: what the tables hold is the
    /// person's own text (notes, their synced bases, frozen changes, the
    /// history, local-only files) and sync bookkeeping, all of which also
    /// lives on this disk in the files they edit, and on the server.
    /// Debian builds SQLite with `secure_delete=ON`, which writes a page of
    /// zeros for every page freed: a save of a 2 MiB note and each pruned
    /// history entry then cost their size again in the log (docs/mount.md).
    static let secureDelete = "FAST"

    /// After a checkpoint empties the log, SQLite truncates the file to this
    /// size; the log stays below the checkpoint size plus one transaction.
    static let walSizeLimitBytes = 64 << 20

    /// Turns on `auto_vacuum=INCREMENTAL` (once, for a database made before
    /// it was used: a `VACUUM` copies the live pages into a new file), so
    /// pruning can give pages back to the file system. Skipped, and tried
    /// again at the next open, when the disk lacks room for the copy or the
    /// database is busy. Returns whether it is on.
    private static func enableIncrementalVacuum(_ db: Connection, freeBytes: Int64?, reserve: Int64) throws -> Bool {
        let mode = try db.queryOne("PRAGMA auto_vacuum") { $0.int(0) }
        if mode == 2 { return true }
        let pageCount = try db.queryOne("PRAGMA page_count") { $0.int64(0) } ?? 0
        let freePages = try db.queryOne("PRAGMA freelist_count") { $0.int64(0) } ?? 0
        let pageSize = try db.queryOne("PRAGMA page_size") { $0.int64(0) } ?? 4_096
        // The copy is written to a temporary file and to the log: twice the live pages.
        let needed = 2 * (pageCount - freePages) * pageSize + reserve
        guard let freeBytes, freeBytes > needed else { return false }
        do {
            try db.execute("PRAGMA auto_vacuum=INCREMENTAL; VACUUM")
            _ = try db.checkpointAndTruncateLog()
        } catch {
            return false
        }
        return try db.queryOne("PRAGMA auto_vacuum") { $0.int(0) } == 2
    }

    /// SQLite copies the WAL into the database (and syncs both) once the WAL
    /// holds this many pages; the default, 1,000, meant a checkpoint every 50
    /// files of a `cp -r`, each rewriting the same index pages. 8,192 pages
    /// (32 MiB at 4 KiB) copies each hot page once per ~400 files. Durability
    /// does not depend on it: a commit is in the WAL either way.
    static let walCheckpointPages = 8_192

    private static func ensureSyncState(_ db: Connection, configuration: StoreConfiguration) throws {
        let exists = try db.queryOne("SELECT 1 FROM sync_state WHERE id = 1") { _ in true } ?? false
        guard !exists else { return }
        // OR IGNORE: another process opening the same fresh file may have made
        // the row since; its device id stands.
        try db.run(
            "INSERT OR IGNORE INTO sync_state(id, device_id, device_name) VALUES (1, ?, ?)",
            DeviceID(configuration.newUUID()), configuration.defaultDeviceName)
    }

    // MARK: Observers

    /// Calls `observer` after every commit that changed something, on the
    /// committing thread, outside the database lock. Keep it short: queue work.
    @discardableResult
    func addObserver(_ observer: @escaping @Sendable (StoreCommit) -> Void) -> Int {
        let id = nextObserverID.add(1, ordering: .relaxed).newValue
        observers.withLock { $0[id] = observer }
        return id
    }

    func removeObserver(_ id: Int) {
        _ = observers.withLock { $0.removeValue(forKey: id) }
    }

    private func notify(_ commit: StoreCommit) {
        guard !commit.isEmpty else { return }
        let current = observers.withLock { Array($0.values) }
        for observer in current { observer(commit) }
    }

    // MARK: Transactions

    /// Runs `body` in one write transaction, then tells observers what it changed.
    func write<T>(
        origin: StoreCommit.Origin, checkSpace: Bool = true,
        _ body: (Connection, inout StoreCommit) throws -> T
    ) throws(StoreError) -> T {
        if checkSpace { try ensureFreeSpace() }
        var commit = StoreCommit(origin: origin)
        let result = try StoreError.wrap {
            try queue.sync { db in
                // Only the outermost transaction settles local files' changes.
                let outermost = !db.isInTransaction
                do {
                    let value = try db.transaction {
                        let result = try body(db, &commit)
                        try updateDirectoryTimes(db, &commit)
                        configuration.insideWriteTransaction?()
                        return result
                    }
                    if outermost { localFiles.finishTransaction(committed: true) }
                    return value
                } catch {
                    if outermost { localFiles.finishTransaction(committed: false) }
                    throw error
                }
            }
        }
        notify(commit)
        return result
    }

    /// Runs `body` in a read transaction (one snapshot).
    func read<T>(_ body: (Connection) throws -> T) throws(StoreError) -> T {
        try StoreError.wrap { try queue.read(body) }
    }

    /// Runs `body`, which must run exactly one statement, without an explicit
    /// transaction: a single SELECT sees one snapshot by itself, and the
    /// mount's hottest reads (lookup, getattr, read) save the `BEGIN` and
    /// `COMMIT` round through SQLite's parser.
    func readOneStatement<T>(_ body: (Connection) throws -> T) throws(StoreError) -> T {
        try StoreError.wrap { try queue.sync(body) }
    }

    private func ensureFreeSpace() throws(StoreError) {
        guard configuration.diskReserveBytes > 0 else { return }
        // glibc's statvfs reads and parses the whole mount table on every
        // call (for f_flag): a measurable share of each small write. Far from
        // the reserve, one answer serves for a moment; near it, every write asks.
        let nowTicks = DispatchTime.now().uptimeNanoseconds
        let recent = freeSpaceCheck.withLock { last -> Bool in
            guard let last else { return false }
            return nowTicks &- last.checkedAt < Self.freeSpaceRecheckNanoseconds
                && last.freeBytes - configuration.diskReserveBytes > Self.freeSpaceMarginBytes
        }
        if recent { return }
        guard let free = freeDiskBytes() else { return }
        freeSpaceCheck.withLock { $0 = (nowTicks, free) }
        if free < configuration.diskReserveBytes { throw .diskFull }
    }

    /// Free bytes when they are below the reserve (saves fail), else nil.
    func diskFullFreeBytes() -> Int64? {
        guard configuration.diskReserveBytes > 0, let free = freeDiskBytes(), free < configuration.diskReserveBytes
        else { return nil }
        return max(0, free)
    }

    /// The engine's own writes (pulled pages, settled conflicts) stop at half
    /// the reserve: they may use some of the room saves leave, so a sync can
    /// finish near the line, but never fill the disk to zero.
    func ensureFreeSpaceForSync() throws(StoreError) {
        guard configuration.diskReserveBytes > 0, let free = freeDiskBytes() else { return }
        if free < configuration.diskReserveBytes / 2 { throw .diskFull }
    }

    /// The bytes an unprivileged writer may still use on the database's disk; nil when unknown.
    func freeDiskBytes() -> Int64? { Self.freeDiskBytes(in: directoryPath) }

    static func freeDiskBytes(in directoryPath: String) -> Int64? {
        var info = statvfs()
        guard statvfs(directoryPath, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// How long one free-space answer is trusted, when far from the reserve.
    static let freeSpaceRecheckNanoseconds: UInt64 = 100_000_000
    /// "Far": more free than the reserve plus this, more than a burst of
    /// writes can use up within `freeSpaceRecheckNanoseconds`.
    static let freeSpaceMarginBytes: Int64 = 1 << 30

    var now: Int64 { configuration.clock.nowNanoseconds() }

    func newUUID() -> UUID { configuration.newUUID() }

    // MARK: Durability and sessions

    /// Makes everything committed so far survive power loss: one commit with
    /// `synchronous=FULL`, which syncs the WAL (used by `fsync()`).
    func durableSync() throws(StoreError) {
        try StoreError.wrap {
            try queue.sync { db in try db.syncWriteAheadLog() }
        }
    }

    /// Starts a mount session: paths tombstoned in earlier sessions can no
    /// longer be revived, and local tombstones (notes deleted before any
    /// change of them was sent) go, unless they are in the trash.
    @discardableResult
    func beginSession() throws(StoreError) -> Int64 {
        try write(origin: .local, checkSpace: false) { db, _ in
            try db.run("UPDATE sync_state SET session = session + 1 WHERE id = 1")
            try db.run("DELETE FROM revivable")
            try db.run(
                """
                DELETE FROM notes WHERE deleted = 1 AND server_version IS NULL
                  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = notes.id)
                  AND NOT EXISTS (SELECT 1 FROM trash t WHERE t.note_id = notes.id)
                """)
            return try db.queryOne("SELECT session FROM sync_state WHERE id = 1") { $0.int64(0) } ?? 0
        }
    }

    /// What the store's connection has done so far (tests bound a query's cost with it).
    func databaseWork() -> WorkCounters {
        queue.sync { $0.workCounters }
    }

    /// Runs SQLite's integrity check; `["ok"]` means healthy.
    func integrityCheck() throws(StoreError) -> [String] {
        try StoreError.wrap { try queue.sync { db in try db.integrityCheck() } }
    }

    /// This machine's device id and name.
    func device() throws(StoreError) -> (id: DeviceID, name: String) {
        try read { db in
            try db.query("SELECT device_id, device_name FROM sync_state WHERE id = 1") { row in
                (DeviceID(try row.uuid(0, in: "sync_state")), row.string(1))
            }.first ?? (DeviceID(), configuration.defaultDeviceName)
        }
    }

    /// Sets the name this machine shows in conflict copies.
    func setDeviceName(_ name: String) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            try db.run("UPDATE sync_state SET device_name = ? WHERE id = 1", name)
        }
    }
}
