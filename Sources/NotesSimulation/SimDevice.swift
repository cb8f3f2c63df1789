import Foundation
import NotesModel
import NotesStore
import SQLiteKit
import SyncEngine
import Synchronization

/// Deterministic ids for one device, drawn from its own generator.
final class SimUUIDSource: Sendable {
    private let random: Mutex<SimRandom>

    init(seed: UInt64) { random = Mutex(SimRandom(seed: seed)) }

    func next() -> UUID {
        let (high, low) = random.withLock { ($0.next(), $0.next()) }
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(index)))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(index)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

/// The simulated time: nanoseconds since 1970, moved only by the world.
final class SimTime: Sendable {
    /// 2026-01-01T00:00:00Z.
    static let start: Int64 = 1_767_225_600 * 1_000_000_000
    private let value = Mutex<Int64>(SimTime.start)
    private let serverJumpValue = Mutex<Int64>(0)

    var now: Int64 { value.withLock { $0 } }
    func advance(seconds: Int64) { value.withLock { $0 += seconds * 1_000_000_000 } }
    /// Moves the clock to `nanoseconds` if that is later (the schedulers' waits end at exact instants).
    func advance(to nanoseconds: Int64) { value.withLock { $0 = max($0, nanoseconds) } }
    /// How far the server's clock runs ahead (cursor-expiry faults push it past retention).
    var serverJump: Int64 { serverJumpValue.withLock { $0 } }
    func jumpServer(seconds: Int64) { serverJumpValue.withLock { $0 += seconds * 1_000_000_000 } }
}

/// One simulated machine: a real `NotesStore` on its own SQLite file and a
/// real `SyncEngine`, reopened from scratch after a crash.
///
/// `@unchecked Sendable`: the world drives every device from one task, one
/// step at a time; the transport's hooks and the store's observer run while
/// that task is suspended in the device's own `sync()`, never concurrently.
final class SimDevice: @unchecked Sendable {
    let index: Int
    let name: String
    let path: String
    let configuration: StoreConfiguration
    private(set) var store: NotesStore
    private(set) var engine: SyncEngine
    private(set) var transport: SimTransport
    /// A read-only view of the same file for the simulation's checks.
    private(set) var reader: Connection
    private var observerID = 0
    /// Offline until this step (long offline periods).
    var offlineUntilStep = -1
    /// Set by the transport: the device dies when the current run returns.
    var crashPending = false
    /// Tokens in this device's dirty notes before the latest commit: no
    /// remote commit may take them away.
    var dirtyTokens = Set<Int>()
    var crashes = 0
    /// The device's real `SyncScheduler` in seeds that run one (SimWorld+Scheduler.swift).
    var scheduler: SyncScheduler?
    var schedulerOwner: Int?
    /// Schedulers of earlier lives, still to be stopped.
    var retiredSchedulers: [SyncScheduler] = []

    init(
        index: Int, path: String, configuration: StoreConfiguration, engineConfiguration: SyncEngine.Configuration,
        world: SimWorld
    ) throws {
        self.index = index
        self.name = "dev\(index)"
        self.path = path
        self.configuration = configuration
        let opened = try Self.open(
            path: path, configuration: configuration, engineConfiguration: engineConfiguration, index: index,
            world: world)
        (store, engine, transport, reader) = opened
    }

    private static func open(
        path: String, configuration: StoreConfiguration, engineConfiguration: SyncEngine.Configuration, index: Int,
        world: SimWorld
    ) throws -> (NotesStore, SyncEngine, SimTransport, Connection) {
        let store = try NotesStore(path: path, configuration: configuration)
        if world.breakage == .chunksOutliveWholeWrites {
            try Connection(path: path).execute("DROP TRIGGER IF EXISTS notes_unchunk")
        }
        try store.admin.beginSession()
        let transport = SimTransport(world: world, device: index)
        let engine = try SyncEngine(replica: store.replica, transport: transport, configuration: engineConfiguration)
        let reader = try Connection(path: path, options: .init(mode: .readOnly, walJournal: false))
        return (store, engine, transport, reader)
    }

    func observe(_ world: SimWorld) {
        observerID = store.tree.addObserver { [unowned self, unowned world] commit in
            guard commit.origin == .remote else { return }
            world.checkDirtyTextSurvives(self, after: "a remote commit")
            // Text the server confirmed is no longer this device's to keep:
            // another device may move or remove it, and a later page brings that.
            self.dirtyTokens = (try? self.tokensInDirtyNotes()) ?? []
        }
    }

    /// A crash between two transactions: the engine and every handle go; the
    /// store is opened again from its file, as after `kill -9`.
    func crashAndReopen(engineConfiguration: SyncEngine.Configuration, world: SimWorld) throws {
        store.tree.removeObserver(observerID)
        world.retireScheduler(of: self)
        crashes += 1
        crashPending = false
        let opened = try Self.open(
            path: path, configuration: configuration, engineConfiguration: engineConfiguration, index: index,
            world: world)
        (store, engine, transport, reader) = opened
        observe(world)
    }

    // MARK: Reading the file directly (checks only)

    /// Every token this device still holds: live notes (conflict copies
    /// included), local-only files (`(not synced)` copies, editor backups),
    /// the local history, and notes whose deletion the mass-delete guard holds
    /// here (a held pulled deletion leaves its note live).
    func heldTokens() throws -> Set<Int> {
        var tokens = Set<Int>()
        try reader.readTransaction {
            for sql in [
                "SELECT \(NotesStore.noteBodySQL(of: "n")) FROM notes n WHERE deleted = 0", "SELECT body FROM history",
                """
                SELECT \(NotesStore.noteBodySQL(of: "n")) FROM notes n WHERE deleted = 1
                  AND EXISTS (SELECT 1 FROM delete_guard WHERE held_since_ns IS NOT NULL)
                  AND EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = n.id
                              AND o.op = 'delete' AND o.state = 'pending')
                """,
            ] {
                try reader.forEachRow(sql, arguments: []) { row in
                    tokens.formUnion(SimText.tokens(row.data(0)))
                    return true
                }
            }
        }
        tokens.formUnion(try localFileTokens())
        return tokens
    }

    /// Tokens this device typed into notes that the server has not confirmed
    /// yet: in a dirty note's body and not in its base.
    func tokensInDirtyNotes() throws -> Set<Int> {
        var tokens = Set<Int>()
        try reader.forEachRow(
            """
            SELECT \(NotesStore.noteBodySQL(of: "n")), CASE base_exists WHEN 1 THEN base_body ELSE x'' END FROM notes n
            WHERE deleted = 0 AND local_rev <> synced_rev
            """, arguments: []
        ) { row in
            tokens.formUnion(SimText.tokens(row.data(0)).subtracting(SimText.tokens(row.data(1))))
            return true
        }
        return tokens
    }

    /// Live notes with their tokens, for the trace.
    func describeNotes() throws -> String {
        var parts = try reader.query(
            "SELECT title, \(NotesStore.noteBodySQL(of: "n")), local_rev <> synced_rev, server_version, deleted FROM notes n ORDER BY seq"
        ) { row -> String in
            let tokens = SimText.tokens(row.data(1)).sorted().map(String.init).joined(separator: ",")
            let flags = (row.bool(4) ? "†" : "") + (row.bool(2) ? "*" : "")
            return "\(row.string(0))\(flags)@\(row.optionalInt64(3).map(String.init) ?? "-"){\(tokens)}"
        }
        let pending = try reader.queryOne("SELECT count(*) FROM outbox") { $0.int(0) } ?? 0
        parts.append("outbox=\(pending)")
        return parts.joined(separator: " ")
    }

    /// Live notes and folders as comparable lines (id, title, folder, bytes).
    func snapshot() throws -> [String] {
        try reader.readTransaction {
            let folders = try reader.query(
                "SELECT id, name, parent_id FROM folders WHERE deleted = 0 ORDER BY id"
            ) { "folder \($0.string(0)) \($0.string(1).debugDescription) parent=\($0.optionalString(2) ?? "-")" }
            let notes = try reader.query(
                "SELECT id, title, folder_id, hex(\(NotesStore.noteBodySQL(of: "n"))) FROM notes n WHERE deleted = 0 ORDER BY id"
            ) {
                "note \($0.string(0)) \($0.string(1).debugDescription) folder=\($0.optionalString(2) ?? "-") \($0.string(3))"
            }
            return folders + notes
        }
    }

    /// Problems with the shown names: every live note and folder has exactly
    /// one name, every name points at a live entry, names are unique per directory.
    func nameProblems() throws -> [String] {
        try reader.readTransaction {
            var problems: [String] = []
            let unnamed = try reader.query(
                """
                SELECT 'note ' || id FROM notes n WHERE deleted = 0 AND NOT EXISTS
                  (SELECT 1 FROM names WHERE entry_kind = 'note' AND entry_id = n.id)
                UNION ALL
                SELECT 'folder ' || id FROM folders f WHERE deleted = 0 AND NOT EXISTS
                  (SELECT 1 FROM names WHERE entry_kind = 'folder' AND entry_id = f.id)
                """
            ) { $0.string(0) }
            problems += unnamed.map { "\(name): live \($0) has no name" }
            let dangling = try reader.query(
                """
                SELECT entry_kind || ' ' || entry_id || ' as ' || name FROM names m WHERE
                  (entry_kind = 'note' AND NOT EXISTS (SELECT 1 FROM notes WHERE id = m.entry_id AND deleted = 0))
                  OR (entry_kind = 'folder' AND NOT EXISTS (SELECT 1 FROM folders WHERE id = m.entry_id AND deleted = 0))
                """
            ) { $0.string(0) }
            problems += dangling.map { "\(name): name for a missing entry: \($0)" }
            let clashes = try reader.query(
                "SELECT parent_key, name, count(*) FROM names GROUP BY parent_key, name HAVING count(*) > 1"
            ) { "\($0.string(0))/\($0.string(1)) ×\($0.int(2))" }
            problems += clashes.map { "\(name): duplicate display name \($0)" }
            return problems
        }
    }
}
