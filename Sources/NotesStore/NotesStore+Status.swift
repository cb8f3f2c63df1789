import Foundation
import NotesModel
import SQLiteKit

/// What `notesfs status` and `.notesfs/status` show.
public struct StoreStatus: Sendable, Equatable {
    public struct Refusal: Sendable, Equatable {
        public var title: String
        public var reason: String
        /// The local-only file holding the refused text, if it still exists.
        public var keptAt: String?
        public var atNanoseconds: Int64
    }

    public var noteCount: Int
    public var folderCount: Int
    /// Changes queued in the outbox (several may concern one note).
    public var pendingCount: Int
    public var oldestPendingNanoseconds: Int64?
    /// Paths of notes and folders not yet synced (first 1,000).
    public var unsyncedPaths: [String]
    /// Notes with changes waiting to be sent, each counted once.
    public var pendingNotes: Int = 0
    /// Folders with changes waiting to be sent, each counted once.
    public var pendingFolders: Int = 0
    /// Local-only files and symbolic links (editor scratch files, hidden
    /// files, everything in `.git`): kept on this machine, never synced.
    public var localOnlyFiles: Int = 0
    /// Paths of the first local-only entries that sit in synced folders (a
    /// directory such as `.git` ends in `/`), without the leading `/`.
    public var localOnlyPaths: [String] = []
    /// How many local-only entries sit in synced folders in all.
    public var localOnlyTopLevel: Int = 0
    /// What the running mount's sync is doing; set by whoever asked the
    /// mount (nil: no mount answered, or it has no server).
    public var live: LiveSync?
    /// Paths of conflict copies.
    public var conflictCopies: [String]
    public var refusals: [Refusal]
    public var sync: SyncStateSnapshot
    /// Deletions held by the mass-delete guard, in each direction.
    public var massDeleteHold: MassDeleteHold
    /// Paths of notes held back from sync because a write tried to take them past the size cap.
    public var heldForSize: [String] = []
    /// The size cap, for the message about those notes.
    public var noteSizeLimitBytes: Int = 16 << 20
    /// Free bytes on the database's disk when they are below the reserve
    /// (saves fail with ENOSPC until space is freed); nil otherwise.
    public var diskFullFreeBytes: Int64?
    /// The free space saves need, for the remedy.
    public var diskReserveBytes: Int64 = 32 << 20
}

/// What a running mount's sync is doing, which the database alone cannot
/// tell: whether a run is going on, how far it got, when the next try is.
public struct LiveSync: Sendable, Equatable, Codable {
    /// A run is going on.
    public var running: Bool
    /// Notes and folders this run received so far.
    public var received: Int
    /// Changes this run sent so far.
    public var sent: Int
    /// Received plus what the server's change counter says is still to
    /// come (an estimate from above); nil when unknown.
    public var expectedTotal: Int?
    public var elapsedSeconds: Double
    /// The next attempt after a failed run, as a sentence; nil when none waits.
    public var retry: String?

    public init(
        running: Bool, received: Int = 0, sent: Int = 0, expectedTotal: Int? = nil, elapsedSeconds: Double = 0,
        retry: String? = nil
    ) {
        self.running = running
        self.received = received
        self.sent = sent
        self.expectedTotal = expectedTotal
        self.elapsedSeconds = elapsedSeconds
        self.retry = retry
    }
}

extension NotesStore {
    /// How many local-only entries in synced folders `status` names.
    static let localOnlyPathsMax = 5

    /// A snapshot of counts, pending work and the last sync outcome.
    func status() throws(StoreError) -> StoreStatus {
        let sync = try syncState()
        return try read { db in
            let notes = try db.queryOne("SELECT count(*) FROM notes WHERE deleted = 0") { $0.int(0) } ?? 0
            let folders = try db.queryOne("SELECT count(*) FROM folders WHERE deleted = 0") { $0.int(0) } ?? 0
            let (pending, oldest) =
                try db.queryOne("SELECT count(*), min(created_ns) FROM outbox", map: { ($0.int(0), $0.optionalInt64(1)) })
                ?? (0, nil)
            let unsyncedRefs = try db.query(
                "SELECT entity_kind, entity_id FROM outbox GROUP BY entity_kind, entity_id ORDER BY min(seq) LIMIT 1000"
            ) { row -> EntryRef? in
                // Status is how a damaged row comes to light: it is left out here, not an error.
                (try? row.entityRef(kind: 0, id: 1, in: "outbox")).map(EntryRef.init)
            }
            var unsynced: [String] = []
            for case let ref? in unsyncedRefs {
                if let path = try path(db, of: ref) {
                    unsynced.append(path)
                } else if case .note(let id) = ref, let row = try NoteRow.load(db, id: id) {
                    unsynced.append("(deleted) \(row.title)")
                } else if case .folder(let id) = ref, let row = try FolderRow.load(db, id: id) {
                    unsynced.append("(deleted folder) \(row.name)")
                }
            }
            let copies = try db.query("""
                SELECT id FROM notes WHERE deleted = 0
                  AND (conflict_of IS NOT NULL OR instr(title, ' (conflicted copy ') > 0) ORDER BY seq
                """) {
                NoteID($0.string(0))
            }
            var copyPaths: [String] = []
            for case let id? in copies {
                if let path = try path(db, of: .note(id)) { copyPaths.append(path) }
            }
            let refusalRows = try db.query(
                "SELECT title, reason, copy_seq, at_ns FROM refusals ORDER BY seq DESC LIMIT 100"
            ) { ($0.string(0), $0.string(1), $0.optionalInt64(2), $0.int64(3)) }
            var refusals: [StoreStatus.Refusal] = []
            for (title, reason, copySeq, at) in refusalRows {
                let keptAt = try copySeq.flatMap { try path(db, of: .local($0)) }
                refusals.append(StoreStatus.Refusal(title: title, reason: reason, keptAt: keptAt, atNanoseconds: at))
            }
            let hold = try massDeleteHold(db)
            var status = StoreStatus(
                noteCount: notes, folderCount: folders, pendingCount: pending, oldestPendingNanoseconds: oldest,
                unsyncedPaths: unsynced, conflictCopies: copyPaths, refusals: refusals, sync: sync,
                massDeleteHold: hold, heldForSize: try notesHeldForSize(db),
                noteSizeLimitBytes: configuration.noteSizeLimitBytes, diskFullFreeBytes: diskFullFreeBytes(),
                diskReserveBytes: configuration.diskReserveBytes)
            // Notes and folders, not changes: ten edits of one note are one note waiting.
            let waiting = try db.query(
                "SELECT entity_kind, count(DISTINCT entity_id) FROM outbox GROUP BY entity_kind"
            ) { (EntityKind(rawValue: $0.string(0)), $0.int(1)) }
            for (kind, count) in waiting {
                switch kind {
                case .note: status.pendingNotes = count
                case .folder: status.pendingFolders = count
                case nil: break
                }
            }
            try localOnlySummary(db, into: &status)
            return status
        }
    }

    /// Counts local-only files and names the first local-only entries that
    /// sit in synced folders (`.git/`, `.plan`, `Work/~draft.md`).
    private func localOnlySummary(_ db: Connection, into status: inout StoreStatus) throws {
        // Entries with a name only: an unlinked file still open has none.
        status.localOnlyFiles =
            try db.queryOne(
                """
                SELECT count(*) FROM local_entries le
                JOIN names nm ON nm.entry_kind = 'local' AND nm.entry_id = CAST(le.seq AS TEXT)
                WHERE le.type <> \(EntryKind.directory.rawValue)
                """) { $0.int(0) } ?? 0
        let top = """
            FROM names nm JOIN local_entries le ON nm.entry_id = CAST(le.seq AS TEXT)
            WHERE nm.entry_kind = 'local' AND nm.parent_key NOT LIKE 'l:%'
            """
        status.localOnlyTopLevel = try db.queryOne("SELECT count(*) \(top)") { $0.int(0) } ?? 0
        let rows = try db.query(
            "SELECT le.seq, le.type \(top) ORDER BY nm.seq LIMIT ?", Self.localOnlyPathsMax
        ) { ($0.int64(0), $0.int(1)) }
        for (seq, type) in rows {
            guard let path = try path(db, of: .local(seq)) else { continue }
            status.localOnlyPaths.append(String(path.dropFirst()) + (type == EntryKind.directory.rawValue ? "/" : ""))
        }
    }
}
