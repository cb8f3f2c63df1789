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
    public var pendingCount: Int
    public var oldestPendingNanoseconds: Int64?
    /// Paths of notes and folders not yet synced (first 1,000).
    public var unsyncedPaths: [String]
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

extension NotesStore {
    /// A snapshot of counts, pending work and the last sync outcome.
    public func status() throws(StoreError) -> StoreStatus {
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
                switch row.string(0) {
                case "note": NoteID(row.string(1)).map(EntryRef.note)
                case "folder": FolderID(row.string(1)).map(EntryRef.folder)
                default: nil
                }
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
            return StoreStatus(
                noteCount: notes, folderCount: folders, pendingCount: pending, oldestPendingNanoseconds: oldest,
                unsyncedPaths: unsynced, conflictCopies: copyPaths, refusals: refusals, sync: sync,
                massDeleteHold: hold, heldForSize: try notesHeldForSize(db),
                noteSizeLimitBytes: configuration.noteSizeLimitBytes, diskFullFreeBytes: diskFullFreeBytes(),
                diskReserveBytes: configuration.diskReserveBytes)
        }
    }
}
