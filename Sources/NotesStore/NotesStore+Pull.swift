import Foundation
import NotesModel
import SQLiteKit

/// The sync bookkeeping row: where this store syncs to and how it went.
public struct SyncStateSnapshot: Sendable, Equatable {
    public var serverURL: String?
    /// `account:<key>` once a server named the account (`AccountBinding`).
    public var accountID: String?
    public var deviceID: DeviceID
    public var deviceName: String
    public var cursor: String?
    public var lastSuccessNanoseconds: Int64?
    public var lastAttemptNanoseconds: Int64?
    public var lastFailed: Bool
    public var lastError: String?
}

// Applying pulled changes and keeping the sync state row.
extension NotesStore {
    /// Applies one pulled page and its cursor in one transaction. A dirty local
    /// row is skipped (the next push meets the conflict and merges); our own
    /// echoes (version ≤ ours) are skipped. Deletions the mass-delete guard
    /// holds are kept aside (not applied) and the rest of the page applies,
    /// so the cursor moves on without losing them.
    @discardableResult
    func applyPulled(_ entities: [RemoteEntity], cursor: String?) throws(StoreError) -> PullReport {
        try ensureFreeSpaceForSync()
        return try write(origin: .remote, checkSpace: false) { db, commit in
            var report = PullReport()
            let guarded = try deleteGuardForPage(db, entities)
            for (index, entity) in entities.enumerated() {
                if guarded.held && guarded.deletions.contains(index) {
                    try holdPulledDeletion(db, entity)
                    report.heldDeletions += 1
                    continue
                }
                // A newer row of a held entity replaces its held tombstone.
                try db.run(
                    "DELETE FROM held_pulls WHERE entity_kind = ? AND entity_id = ? AND version <= ?",
                    entity.kind, entity.ref.idText, entity.version)
                let removes = guarded.deletions.contains(index)
                var notes = 1
                if removes, let folder = entity.ref.folderID { notes = try liveNotes(inFolder: folder, db).count }
                switch try applyOne(db, entity, commit: &commit) {
                case .applied:
                    report.applied += 1
                    if removes {
                        try logDeletion(
                            db, direction: "pull", entity.ref, notes: notes, at: now)
                    }
                case .dirty: report.skippedDirty += 1
                case .echo: report.skippedEcho += 1
                case .unseenDeletion(let id):
                    report.skippedEcho += 1
                    report.unseenDeletedNotes.append(UnseenDeletion(id: id, version: entity.version))
                }
            }
            if let cursor { try db.run("UPDATE sync_state SET cursor = ? WHERE id = 1", cursor) }
            return report
        }
    }

    enum PullResult {
        case applied, dirty, echo
        /// A deletion of a note this machine never had.
        case unseenDeletion(NoteID)
    }

    func hasOutbox(_ db: Connection, _ ref: EntityRef) throws -> Bool {
        try db.queryOne(
            "SELECT 1 FROM outbox WHERE entity_kind = ? AND entity_id = ? LIMIT 1", ref.kind, ref.idText) { _ in true }
            ?? false
    }

    func applyOne(_ db: Connection, _ entity: RemoteEntity, commit: inout StoreCommit) throws -> PullResult {
        switch entity.kind {
        case .note:
            let id = NoteID(entity.ref.id)
            let content = entity.deleted ? nil : entity.note
            guard let row = try NoteRow.load(db, id: id) else {
                guard let content else { return .unseenDeletion(id) }
                let time = now
                try db.run(
                    """
                    INSERT INTO notes(id, folder_id, title, body, created_ns, updated_ns, server_version,
                        base_exists, base_title, base_body, base_folder_id, local_rev, synced_rev)
                    VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, 1, 1)
                    """, id.description, content.folderID?.description, content.title, content.body, time, time,
                    entity.version, content.title, content.body, content.folderID?.description)
                commit.changedEntries.insert(.note(id))
                let directory = try displayDirectory(db, folderID: content.folderID)
                try placeName(db, entry: .note(id), in: directory, source: content.title, commit: &commit)
                return .applied
            }
            if try row.isDirty || hasOutbox(db, entity.ref) { return .dirty }
            if let version = row.serverVersion, entity.version <= version { return .echo }
            try writeNote(db, row, to: content, server: entity, trash: .deletedElsewhere, commit: &commit)
            return .applied
        case .folder:
            let id = FolderID(entity.ref.id)
            let content = entity.deleted ? nil : entity.folder
            guard let row = try FolderRow.load(db, id: id) else {
                guard let content else { return .echo }
                let time = now
                try db.run(
                    """
                    INSERT INTO folders(id, parent_id, name, created_ns, updated_ns, server_version, base_exists,
                        base_name, base_parent_id, local_rev, synced_rev)
                    VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, 1, 1)
                    """, id.description, content.parentID?.description, content.name, time, time, entity.version,
                    content.name, content.parentID?.description)
                commit.changedEntries.insert(.folder(id))
                let directory = try displayDirectory(db, folderID: content.parentID)
                try placeName(db, entry: .folder(id), in: directory, source: content.name, commit: &commit)
                try replaceChildren(of: id, db, commit: &commit)
                return .applied
            }
            if try row.isDirty || hasOutbox(db, entity.ref) { return .dirty }
            if let version = row.serverVersion, entity.version <= version { return .echo }
            try writeFolder(db, row, to: content, server: entity, commit: &commit)
            return .applied
        }
    }

    /// The sync bookkeeping row.
    func syncState() throws(StoreError) -> SyncStateSnapshot {
        try read { db in
            guard
                let state = try db.query(
                    """
                    SELECT server_url, account_id, device_id, device_name, cursor, last_success_ns,
                        last_attempt_ns, last_failed, last_error
                    FROM sync_state WHERE id = 1
                    """,
                    map: { row in
                        SyncStateSnapshot(
                            serverURL: row.optionalString(0), accountID: row.optionalString(1),
                            deviceID: DeviceID(try row.uuid(2, in: "sync_state")), deviceName: row.string(3),
                            cursor: row.optionalString(4), lastSuccessNanoseconds: row.optionalInt64(5),
                            lastAttemptNanoseconds: row.optionalInt64(6), lastFailed: row.bool(7),
                            lastError: row.optionalString(8))
                    }
                ).first
            else { throw StoreError.notFound("sync state") }
            return state
        }
    }

    /// Records the server this store syncs with (a new URL of the same
    /// server keeps everything). Which account it syncs as is settled at the
    /// first contact (`confirmAccount`), so a mount never needs the network.
    func bindServer(url: String) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            try db.run("UPDATE sync_state SET server_url = ? WHERE id = 1", url)
        }
    }

    /// Records the end of a sync run.
    func recordSyncRun(succeeded: Bool, error: String?) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            let time = now
            if succeeded {
                try db.run(
                    """
                    UPDATE sync_state SET last_success_ns = ?, last_attempt_ns = ?, last_failed = 0, last_error = NULL
                    WHERE id = 1
                    """, time, time)
            } else {
                try db.run(
                    "UPDATE sync_state SET last_attempt_ns = ?, last_failed = 1, last_error = ? WHERE id = 1", time,
                    error)
            }
        }
    }
}
