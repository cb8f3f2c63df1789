import Foundation
import NotesModel
import SQLiteKit

/// One live entity in the server's index.
public struct IndexedVersion: Hashable, Sendable {
    public var kind: EntityKind
    public var entityID: String
    public var version: Int64

    public init(kind: EntityKind, entityID: String, version: Int64) {
        self.kind = kind
        self.entityID = entityID
        self.version = version
    }
}

/// What a resync after `410 Gone` did.
public struct ResyncReport: Sendable, Equatable {
    /// Rows taken from the server.
    public var applied = 0
    /// Clean local rows deleted by a server tombstone.
    public var deleted = 0
    /// Local rows the server lacks (even as a tombstone), queued to be created again.
    public var recreated = 0
    public init() {}
}

// The resync after `410 Gone` (DESIGN.md "Sync engine rules").
extension NotesStore {
    /// Server versions this store knows, by entity, for working out which
    /// index entries differ.
    func knownServerVersions() throws(StoreError) -> [IndexedVersion] {
        try read { db in
            let notes = try db.query("SELECT id, server_version FROM notes WHERE server_version IS NOT NULL") {
                IndexedVersion(kind: .note, entityID: $0.string(0), version: $0.int64(1))
            }
            let folders = try db.query("SELECT id, server_version FROM folders WHERE server_version IS NOT NULL") {
                IndexedVersion(kind: .folder, entityID: $0.string(0), version: $0.int64(1))
            }
            return folders + notes
        }
    }

    /// Applies a resync in one transaction. `index` lists every live entity on
    /// the server; `fetched` holds the rows whose version differs from ours
    /// (all of them when `epochChanged`) and the server's tombstones of rows
    /// we hold that the index lacks. Only such a tombstone deletes a local
    /// row: a row the server merely lacks (a tombstone that expired, or a
    /// server restored from an older copy) is kept and queued as a create,
    /// with its id and text. `epochChanged` means the server's history is not
    /// the one our versions came from (a new epoch, or signs that it went back
    /// in time): local rows are rebased instead of overwritten. No pending
    /// change is lost.
    @discardableResult
    func applyResync(
        index: [IndexedVersion], fetched: [RemoteEntity], epochChanged: Bool, cursor: String
    ) throws(StoreError) -> ResyncReport {
        try ensureFreeSpaceForSync()
        return try write(origin: .remote, checkSpace: false) { db, commit in
            var report = ResyncReport()
            if epochChanged {
                // Frozen changes were made against another server history:
                // send them again, as new changes on the restored server's versions.
                let frozen = try db.query(
                    "SELECT seq, entity_kind, entity_id FROM outbox WHERE state = 'in_flight'"
                ) { ($0.int64(0), $0.string(1), $0.string(2)) }
                for (seq, kind, id) in frozen {
                    try db.run("DELETE FROM outbox WHERE seq = ?", seq)
                    if let kind = EntityKind(rawValue: kind) {
                        try enqueue(db, kind: kind, id: id, op: "put", commit: &commit)
                    }
                }
            }
            let present = Set(index.map { "\($0.kind.rawValue):\($0.entityID)" })
            for entity in fetched {
                if epochChanged {
                    try rebase(db, onto: entity, commit: &commit)
                } else if case .applied = try applyOne(db, entity, commit: &commit) {
                    if entity.deleted { report.deleted += 1 } else { report.applied += 1 }
                }
            }
            let fetchedKeys = Set(fetched.map { "\($0.kind.rawValue):\($0.entityID)" })
            for known in try knownVersions(db) where !present.contains(known.key) && !fetchedKeys.contains(known.key) {
                if try recreateOrForget(db, known, commit: &commit) { report.recreated += 1 }
            }
            try db.run("UPDATE sync_state SET cursor = ? WHERE id = 1", cursor)
            return report
        }
    }

    private struct KnownVersion {
        var kind: EntityKind
        var entityID: String
        var key: String { "\(kind.rawValue):\(entityID)" }
    }

    private func knownVersions(_ db: Connection) throws -> [KnownVersion] {
        let notes = try db.query("SELECT id FROM notes WHERE server_version IS NOT NULL") {
            KnownVersion(kind: .note, entityID: $0.string(0))
        }
        let folders = try db.query("SELECT id FROM folders WHERE server_version IS NOT NULL") {
            KnownVersion(kind: .folder, entityID: $0.string(0))
        }
        return notes + folders
    }

    /// A row the server no longer has at all, not even as a tombstone. Only a
    /// server tombstone deletes a local row, so a live one is kept and queued
    /// as a create (null base) with its id and text; true when it was.
    private func recreateOrForget(_ db: Connection, _ known: KnownVersion, commit: inout StoreCommit) throws -> Bool {
        let table = known.kind == .note ? "notes" : "folders"
        let deleted =
            try db.queryOne("SELECT deleted FROM \(table) WHERE id = ?", known.entityID, map: { $0.bool(0) }) ?? true
        if deleted {
            // Our tombstone for something the server forgot: nothing left to
            // say (a note in the trash stays there, as a local tombstone).
            try db.run("DELETE FROM outbox WHERE entity_kind = ? AND entity_id = ?", known.kind.rawValue, known.entityID)
            if known.kind == .note, let id = NoteID(known.entityID), let row = try NoteRow.load(db, id: id) {
                try forgetTombstone(db, row)
            } else {
                try db.run("DELETE FROM \(table) WHERE id = ?", known.entityID)
            }
            return false
        }
        try db.run(
            """
            UPDATE \(table) SET server_version = NULL, base_exists = 0, local_rev = local_rev + 1 WHERE id = ?
            """, known.entityID)
        try db.run(
            "DELETE FROM outbox WHERE entity_kind = ? AND entity_id = ? AND state = 'in_flight'", known.kind.rawValue,
            known.entityID)
        try enqueue(db, kind: known.kind, id: known.entityID, op: "put", commit: &commit)
        return true
    }

    /// After an epoch change, a local row that differs from the restored
    /// server's row. Versions tell whose history is whose: a new epoch starts
    /// past every version the lost history issued (`ServerEpoch` on the
    /// server), so a restored row at or below the version we last synced is
    /// one of our row's ancestors — ours stands and is queued on it, and the
    /// server gets every newer note (and delete) back. A higher version may
    /// have been written since the restore by another machine: we merge with
    /// it right here, on our old base only when the restored row is exactly
    /// that base, else with no common ancestor (the side holding every line
    /// of the other wins, anything else becomes a conflict copy), so nothing
    /// written on either side is overwritten.
    private func rebase(_ db: Connection, onto entity: RemoteEntity, commit: inout StoreCommit) throws {
        switch entity.kind {
        case .note:
            guard let id = NoteID(entity.entityID) else { return }
            guard let row = try NoteRow.load(db, id: id) else {
                _ = try applyOne(db, entity, commit: &commit)
                return
            }
            let serverNote = entity.deleted ? nil : entity.note
            let local = row.deleted ? nil : row.content
            let descendsFromServer = row.serverVersion.map { entity.version <= $0 } ?? false
            guard local != serverNote, !descendsFromServer else {
                try db.run(
                    """
                    UPDATE notes SET server_version = ?, base_exists = ?, base_title = ?, base_body = ?, base_folder_id = ?
                    WHERE seq = ?
                    """, entity.version, serverNote != nil, serverNote?.title, serverNote?.body,
                    serverNote?.folderID?.description, row.seq)
                if local != serverNote {
                    try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE seq = ?", row.seq)
                    try enqueue(db, kind: .note, id: entity.entityID, op: row.deleted ? "delete" : "put", commit: &commit)
                }
                return
            }
            let knownBase = serverNote == row.base ? row.base : nil
            let merged = Self.keepingConflictCopiesWhole(row, configuration.mergeNote(knownBase, local, serverNote))
            try writeNote(db, row, to: merged.result, server: entity, trash: .deletedElsewhere, commit: &commit)
            if let result = merged.result, result != serverNote {
                try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE seq = ?", row.seq)
                try enqueue(db, kind: .note, id: entity.entityID, op: "put", commit: &commit)
            } else if merged.result == nil, serverNote != nil {
                try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE seq = ?", row.seq)
                try enqueue(db, kind: .note, id: entity.entityID, op: "delete", commit: &commit)
            }
            if let copy = merged.conflictCopy {
                _ = try keepInConflictCopy(
                    db, of: row, text: copy, besides: merged.result?.body ?? Data(), commit: &commit)
            }
        case .folder:
            guard let id = FolderID(entity.entityID) else { return }
            guard let row = try FolderRow.load(db, id: id) else {
                _ = try applyOne(db, entity, commit: &commit)
                return
            }
            let serverFolder = entity.deleted ? nil : entity.folder
            let local = row.deleted ? nil : row.content
            let descendsFromServer = row.serverVersion.map { entity.version <= $0 } ?? false
            if local != serverFolder && !descendsFromServer && !row.isDirty {
                // Renamed or moved since the restore, and untouched here: theirs stands.
                try writeFolder(db, row, to: serverFolder, server: entity, commit: &commit)
                return
            }
            try db.run(
                "UPDATE folders SET server_version = ?, base_exists = ?, base_name = ?, base_parent_id = ? WHERE seq = ?",
                entity.version, serverFolder != nil, serverFolder?.name, serverFolder?.parentID?.description, row.seq)
            if local != serverFolder {
                try db.run("UPDATE folders SET local_rev = local_rev + 1 WHERE seq = ?", row.seq)
                try enqueue(
                    db, kind: .folder, id: entity.entityID, op: row.deleted ? "delete" : "put", commit: &commit)
            }
        }
    }
}
