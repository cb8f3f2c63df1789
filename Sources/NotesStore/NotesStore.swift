import Foundation
import NotesModel
import SQLiteKit
import Synchronization

/// The client database: the source of truth for one mount profile. Every
/// public operation is one SQLite transaction that writes the visible rows and
/// their outbox row together, or nothing.
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
    /// When the history was last held to its size cap.
    let historySizeCheck = HistorySizeCheck()
    /// Text replaced behind the kernel's back, for judging writes made through older views.
    let kernelViews = KernelViewLedger()
    /// When this store was opened; the root directory's times.
    let openedNanoseconds: Int64

    /// The database file's path.
    public var path: String { queue.path }

    /// Opens (creating when missing) the database at `path` and migrates it forward.
    public init(path: String, configuration: StoreConfiguration = StoreConfiguration()) throws(StoreError) {
        self.configuration = configuration
        self.directoryPath = (path as NSString).deletingLastPathComponent
        self.openedNanoseconds = configuration.clock.nowNanoseconds()
        queue = try StoreError.wrap {
            try DatabaseQueue(path: path, label: "notesfs.store") { db in
                try db.execute("PRAGMA wal_autocheckpoint=\(Self.walCheckpointPages)")
                try Schema.migrate(db)
                try NotesStore.ensureSyncState(db, configuration: configuration)
            }
        }
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
        try db.run(
            "INSERT INTO sync_state(id, device_id, device_name) VALUES (1, ?, ?)",
            DeviceID(configuration.newUUID()).description, configuration.defaultDeviceName)
    }

    // MARK: Observers

    /// Calls `observer` after every commit that changed something, on the
    /// committing thread, outside the database lock. Keep it short: queue work.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreCommit) -> Void) -> Int {
        let id = nextObserverID.add(1, ordering: .relaxed).newValue
        observers.withLock { $0[id] = observer }
        return id
    }

    public func removeObserver(_ id: Int) {
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
            try queue.write { db in try body(db, &commit) }
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

    /// The bytes an unprivileged writer may still use on the database's disk; nil when unknown.
    func freeDiskBytes() -> Int64? {
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
    public func durableSync() throws(StoreError) {
        try StoreError.wrap {
            try queue.sync { db in try db.syncWriteAheadLog() }
        }
    }

    /// Starts a mount session: paths tombstoned in earlier sessions can no
    /// longer be revived, and local tombstones (notes deleted before any
    /// change of them was sent) go.
    @discardableResult
    public func beginSession() throws(StoreError) -> Int64 {
        try write(origin: .local, checkSpace: false) { db, _ in
            try db.run("UPDATE sync_state SET session = session + 1 WHERE id = 1")
            try db.run("DELETE FROM revivable")
            try db.run(
                """
                DELETE FROM notes WHERE deleted = 1 AND server_version IS NULL
                  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = notes.id)
                """)
            return try db.queryOne("SELECT session FROM sync_state WHERE id = 1") { $0.int64(0) } ?? 0
        }
    }

    /// Runs SQLite's integrity check; `["ok"]` means healthy.
    public func integrityCheck() throws(StoreError) -> [String] {
        try StoreError.wrap { try queue.sync { db in try db.integrityCheck() } }
    }

    /// This machine's device id and name.
    public func device() throws(StoreError) -> (id: DeviceID, name: String) {
        try read { db in
            try db.queryOne("SELECT device_id, device_name FROM sync_state WHERE id = 1") { row in
                (DeviceID(row.string(0)) ?? DeviceID(), row.string(1))
            } ?? (DeviceID(), configuration.defaultDeviceName)
        }
    }

    /// Sets the name this machine shows in conflict copies.
    public func setDeviceName(_ name: String) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            try db.run("UPDATE sync_state SET device_name = ? WHERE id = 1", name)
        }
    }
}
