import Foundation
import NotesModel
import SQLiteKit

/// One live entity in the server's index.
public struct IndexedVersion: Hashable, Sendable {
    public var ref: EntityRef
    public var version: Int64

    public init(_ ref: EntityRef, version: Int64) {
        self.ref = ref
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
            // A row whose id is not a UUID is skipped, as `NoteRow` skips it.
            let notes = try db.query("SELECT id, server_version FROM notes WHERE server_version IS NOT NULL") { row in
                NoteID(row.string(0)).map { IndexedVersion(.note($0), version: row.int64(1)) }
            }
            let folders = try db.query("SELECT id, server_version FROM folders WHERE server_version IS NOT NULL") { row in
                FolderID(row.string(0)).map { IndexedVersion(.folder($0), version: row.int64(1)) }
            }
            return (folders + notes).compactMap { $0 }
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
                ) { row in (row.int64(0), try row.entityRef(kind: 1, id: 2, in: "outbox")) }
                for (seq, ref) in frozen {
                    try db.run("DELETE FROM outbox WHERE seq = ?", seq)
                    try enqueue(db, ref, .put, commit: &commit)
                }
            }
            let present = Set(index.map(\.ref))
            for entity in fetched {
                if epochChanged {
                    try rebase(db, onto: entity, commit: &commit)
                } else if case .applied = try applyOne(db, entity, commit: &commit) {
                    if entity.deleted { report.deleted += 1 } else { report.applied += 1 }
                }
            }
            let fetchedRefs = Set(fetched.map(\.ref))
            for known in try knownVersions(db) where !present.contains(known) && !fetchedRefs.contains(known) {
                if try recreateOrForget(db, known, commit: &commit) { report.recreated += 1 }
            }
            try db.run("UPDATE sync_state SET cursor = ? WHERE id = 1", cursor)
            return report
        }
    }

    /// The entities this store has a server version of (a row whose id is
    /// not a UUID is skipped, as `NoteRow` skips it).
    private func knownVersions(_ db: Connection) throws -> [EntityRef] {
        let notes = try db.query("SELECT id FROM notes WHERE server_version IS NOT NULL") {
            NoteID($0.string(0)).map(EntityRef.note)
        }
        let folders = try db.query("SELECT id FROM folders WHERE server_version IS NOT NULL") {
            FolderID($0.string(0)).map(EntityRef.folder)
        }
        return (notes + folders).compactMap { $0 }
    }

    /// A row the server no longer has at all, not even as a tombstone. Only a
    /// server tombstone deletes a local row, so a live one is kept and queued
    /// as a create (null base) with its id and text; true when it was.
    private func recreateOrForget(_ db: Connection, _ known: EntityRef, commit: inout StoreCommit) throws -> Bool {
        let table = known.kind == .note ? "notes" : "folders"
        let deleted =
            try db.queryOne("SELECT deleted FROM \(table) WHERE id = ?", known.idText, map: { $0.bool(0) }) ?? true
        if deleted {
            // Our tombstone for something the server forgot: nothing left to
            // say (a note in the trash stays there, as a local tombstone).
            try db.run("DELETE FROM outbox WHERE entity_kind = ? AND entity_id = ?", known.kind, known.idText)
            if let id = known.noteID, let row = try NoteRow.load(db, id: id) {
                try forgetTombstone(db, row)
            } else {
                try db.run("DELETE FROM \(table) WHERE id = ?", known.idText)
            }
            return false
        }
        try db.run(
            """
            UPDATE \(table) SET server_version = NULL, base_exists = 0, local_rev = local_rev + 1 WHERE id = ?
            """, known.idText)
        try db.run(
            "DELETE FROM outbox WHERE entity_kind = ? AND entity_id = ? AND state = 'in_flight'", known.kind,
            known.idText)
        try enqueue(db, known, .put, commit: &commit)
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
            guard let row = try NoteRow.load(db, id: NoteID(entity.ref.id)) else {
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
                    try enqueue(db, entity.ref, row.deleted ? .delete : .put, commit: &commit)
                }
                return
            }
            let knownBase = serverNote == row.base ? row.base : nil
            let merged = Self.keepingConflictCopiesWhole(row, configuration.mergeNote(knownBase, local, serverNote))
            try writeNote(db, row, to: merged.result, server: entity, trash: .deletedElsewhere, commit: &commit)
            if let result = merged.result, result != serverNote {
                try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE seq = ?", row.seq)
                try enqueue(db, entity.ref, .put, commit: &commit)
            } else if merged.result == nil, serverNote != nil {
                try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE seq = ?", row.seq)
                try enqueue(db, entity.ref, .delete, commit: &commit)
            }
            if let copy = merged.conflictCopy {
                _ = try keepInConflictCopy(
                    db, of: row, text: copy, besides: merged.result?.body ?? Data(), commit: &commit)
            }
        case .folder:
            guard let row = try FolderRow.load(db, id: FolderID(entity.ref.id)) else {
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
                try enqueue(db, entity.ref, row.deleted ? .delete : .put, commit: &commit)
            }
        }
    }
}
