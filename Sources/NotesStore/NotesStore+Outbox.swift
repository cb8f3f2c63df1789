import Foundation
import NotesModel
import SQLiteKit

// The outbox: freezing changes to send, and settling the server's answers
// exactly as DESIGN.md "Settling a sent change" says.
extension NotesStore {
    /// Changes to send now, oldest first, parents before children: every
    /// in-flight row (resent unchanged), then pending rows frozen now — at most
    /// one in flight per entity, packed up to `maxCount` changes and `maxBytes`
    /// of payload (a single larger change travels alone). Tombstones of notes
    /// and folders held by the mass-delete guard, and notes held back for
    /// size (NotesStore+SizeCap.swift), are left pending.
    func freezeBatch(maxCount: Int = 100, maxBytes: Int = 4 << 20) throws(StoreError) -> [OutgoingChange] {
        try write(origin: .local, checkSpace: false) { db, _ in
            var batch = try inFlight(db)
            var bytes = batch.reduce(0) { $0 + $1.payloadBytes }
            let deleteGuard = try deleteGuardBeforePush(db)
            let pending = try db.query(
                """
                SELECT seq, entity_kind, entity_id, op FROM outbox o WHERE state = 'pending'
                AND NOT EXISTS (SELECT 1 FROM outbox i WHERE i.state = 'in_flight'
                                AND i.entity_kind = o.entity_kind AND i.entity_id = o.entity_id)
                AND NOT \(Self.heldForSizeSQL(outbox: "o"))
                ORDER BY seq
                """
            ) { ($0.int64(0), $0.string(1), $0.string(2), $0.string(3)) }
            for (seq, kindText, entityID, op) in pending {
                guard batch.count < maxCount, let kind = EntityKind(rawValue: kindText) else { break }
                if op == "delete", deleteGuard.holds(deletionMadeAt: try deletionTime(db, kind: kind, id: entityID)) {
                    continue
                }
                if try !batch.isEmpty && bytes + payloadSize(db, kind: kind, entityID: entityID) > maxBytes {
                    break
                }
                guard let change = try freeze(db, seq: seq, kind: kind, entityID: entityID) else { continue }
                if change.isDelete { try logPushedDeletion(db, kind: kind, id: entityID) }
                bytes += change.payloadBytes
                batch.append(change)
            }
            return try Self.parentsFirst(db, batch)
        }
    }

    /// The payload size `freeze` would produce, without freezing.
    private func payloadSize(_ db: Connection, kind: EntityKind, entityID: String) throws -> Int {
        let sql =
            kind == .note
            ? "SELECT CASE deleted WHEN 1 THEN 0 ELSE body_size + length(CAST(title AS BLOB)) END FROM notes WHERE id = ?"
            : "SELECT CASE deleted WHEN 1 THEN 0 ELSE length(CAST(name AS BLOB)) END FROM folders WHERE id = ?"
        return (try db.queryOne(sql, entityID) { $0.int(0) } ?? 0) + 128
    }

    /// Rows already in flight (after a crash, or a batch cut short), unchanged.
    /// `onlySeq` reads just that row (freezing and settling one change must
    /// not reload every frozen payload: that made a 10,000-note upload quadratic).
    private func inFlight(_ db: Connection, onlySeq: Int64? = nil) throws -> [OutgoingChange] {
        let columns = """
            SELECT change_id, entity_kind, entity_id, op, base_version, payload_title, payload_body,
                   payload_folder_id, payload_name, payload_parent_id, attempts FROM outbox
            """
        let sql = onlySeq == nil
            ? columns + " WHERE state = 'in_flight' ORDER BY seq"
            : columns + " WHERE seq = ? AND state = 'in_flight'"
        return try db.query(sql, arguments: onlySeq.map { [$0] } ?? []) { row -> OutgoingChange? in
            guard let changeID = ChangeID(row.string(0)), let kind = EntityKind(rawValue: row.string(1)) else {
                return nil
            }
            let isDelete = row.string(3) == "delete"
            var change = OutgoingChange(
                changeID: changeID, kind: kind, entityID: row.string(2), isDelete: isDelete,
                baseVersion: row.optionalInt64(4), note: nil, folder: nil, attempts: row.int(10))
            if !isDelete {
                switch kind {
                case .note:
                    change.note = NoteContent(
                        title: row.string(5), body: row.data(6), folderID: row.optionalString(7).flatMap(FolderID.init))
                case .folder:
                    change.folder = FolderContent(
                        name: row.string(8), parentID: row.optionalString(9).flatMap(FolderID.init))
                }
            }
            return change
        }.compactMap { $0 }
    }

    /// Copies the entity's current state into its pending row and marks it in flight.
    private func freeze(_ db: Connection, seq: Int64, kind: EntityKind, entityID: String) throws -> OutgoingChange? {
        switch kind {
        case .note:
            guard let id = NoteID(entityID), let row = try NoteRow.load(db, id: id) else {
                try db.run("DELETE FROM outbox WHERE seq = ?", seq)
                return nil
            }
            let op = row.deleted ? "delete" : "put"
            try db.run(
                """
                UPDATE outbox SET state = 'in_flight', op = ?, frozen_rev = ?, base_version = ?,
                    payload_title = ?, payload_body = ?, payload_folder_id = ? WHERE seq = ?
                """, op, row.localRev, row.serverVersion, row.deleted ? nil : row.title,
                row.deleted ? nil : row.body, row.deleted ? nil : row.folderID?.description, seq)
        case .folder:
            guard let id = FolderID(entityID), let row = try FolderRow.load(db, id: id) else {
                try db.run("DELETE FROM outbox WHERE seq = ?", seq)
                return nil
            }
            let op = row.deleted ? "delete" : "put"
            try db.run(
                """
                UPDATE outbox SET state = 'in_flight', op = ?, frozen_rev = ?, base_version = ?,
                    payload_name = ?, payload_parent_id = ? WHERE seq = ?
                """, op, row.localRev, row.serverVersion, row.deleted ? nil : row.name,
                row.deleted ? nil : row.parentID?.description, seq)
        }
        return try inFlight(db, onlySeq: seq).first
    }

    /// Folder puts by depth (parents first), then notes, then folder deletes.
    static func parentsFirst(_ db: Connection, _ batch: [OutgoingChange]) throws -> [OutgoingChange] {
        func depth(_ change: OutgoingChange) throws -> Int {
            var depth = 0
            var current = change.folder?.parentID
            while let id = current, depth < 1_000 {
                depth += 1
                current = try FolderRow.load(db, id: id)?.parentID
            }
            return depth
        }
        var folderPuts: [(Int, OutgoingChange)] = []
        var notes: [OutgoingChange] = []
        var folderDeletes: [OutgoingChange] = []
        for change in batch {
            switch (change.kind, change.isDelete) {
            case (.folder, false): folderPuts.append((try depth(change), change))
            case (.folder, true): folderDeletes.append(change)
            case (.note, _): notes.append(change)
            }
        }
        let sortedFolders = folderPuts.enumerated().sorted { lhs, rhs in
            lhs.element.0 != rhs.element.0 ? lhs.element.0 < rhs.element.0 : lhs.offset < rhs.offset
        }.map { $0.element.1 }
        return sortedFolders + notes + folderDeletes
    }

    /// Whether a sent change still waits for its answer (a frozen row).
    func hasChangesInFlight() throws(StoreError) -> Bool {
        try read { db in
            try db.queryOne("SELECT 1 FROM outbox WHERE state = 'in_flight' LIMIT 1") { _ in true } ?? false
        }
    }

    /// Records a failed send of an in-flight change (it stays frozen).
    func recordSendFailure(_ changeIDs: [ChangeID], error: String) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, _ in
            for id in changeIDs {
                try db.run(
                    "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE change_id = ?", error,
                    id.description)
            }
        }
    }

    /// Gives an in-flight change a new change id (after the server said the id
    /// was reused with another payload). The payload stays frozen.
    func renewChangeID(_ changeID: ChangeID) throws(StoreError) -> ChangeID {
        try write(origin: .local, checkSpace: false) { db, _ in
            let fresh = ChangeID(newUUID())
            try db.run(
                "UPDATE outbox SET change_id = ? WHERE change_id = ? AND state = 'in_flight'", fresh.description,
                changeID.description)
            return fresh
        }
    }

    /// Settles the server's answer for one frozen change, in one transaction.
    /// An answer for a change that is no longer in flight (a duplicate reply) changes nothing.
    @discardableResult
    func settle(_ changeID: ChangeID, outcome: ChangeOutcome) throws(StoreError) -> SettleReport {
        try write(origin: .remote, checkSpace: false) { db, commit in
            try settleOne(db, changeID, outcome: outcome, commit: &commit)
        }
    }

    /// Settles the answers to one push, in order, in one transaction: each
    /// exactly as `settle(_:outcome:)` would, for one commit instead of one per
    /// change (an initial upload settles thousands). With `cursor`, the sync
    /// cursor moves in the same transaction.
    @discardableResult
    func settle(
        _ answers: [(ChangeID, ChangeOutcome)], cursor: CursorAdvance? = nil
    ) throws(StoreError) -> [SettleReport] {
        try write(origin: .remote, checkSpace: false) { db, commit in
            let reports = try answers.map { changeID, outcome in
                try settleOne(db, changeID, outcome: outcome, commit: &commit)
            }
            if let cursor {
                try db.run(
                    "UPDATE sync_state SET cursor = ? WHERE id = 1 AND cursor IS ?", cursor.new, cursor.expected)
            }
            return reports
        }
    }

    private func settleOne(
        _ db: Connection, _ changeID: ChangeID, outcome: ChangeOutcome, commit: inout StoreCommit
    ) throws -> SettleReport {
        guard let frozen = try frozenRow(db, changeID) else { return SettleReport() }
        try db.run("DELETE FROM outbox WHERE seq = ?", frozen.seq)
        commit.settledChanges += 1
        switch (frozen.change.kind, outcome) {
        case (.note, .applied(let version)):
            try settleNoteApplied(db, frozen, version: version)
            return SettleReport()
        case (.folder, .applied(let version)):
            try settleFolderApplied(db, frozen, version: version)
            return SettleReport()
        case (.note, .conflict(let current)):
            return try settleNoteConflict(db, frozen, current: current, commit: &commit)
        case (.folder, .conflict(let current)):
            try settleFolderConflict(db, frozen, current: current, commit: &commit)
            return SettleReport()
        case (.note, .refused(let reason)):
            return try settleNoteRefused(db, frozen, reason: reason, commit: &commit)
        case (.folder, .refused(let reason)):
            try settleFolderRefused(db, frozen, reason: reason, commit: &commit)
            return SettleReport()
        }
    }

    struct FrozenRow {
        var seq: Int64
        var frozenRev: Int64
        var change: OutgoingChange
    }

    private func frozenRow(_ db: Connection, _ changeID: ChangeID) throws -> FrozenRow? {
        guard
            let (seq, rev) = try db.queryOne(
                "SELECT seq, frozen_rev FROM outbox WHERE change_id = ? AND state = 'in_flight'",
                changeID.description, map: { ($0.int64(0), $0.int64(1)) }),
            let change = try inFlight(db, onlySeq: seq).first
        else { return nil }
        return FrozenRow(seq: seq, frozenRev: rev, change: change)
    }

    private func settleNoteApplied(_ db: Connection, _ frozen: FrozenRow, version: Int64) throws {
        let payload = frozen.change.note
        try db.run(
            """
            UPDATE notes SET server_version = ?, synced_rev = ?, base_exists = ?, base_title = ?, base_body = ?,
                base_folder_id = ? WHERE id = ?
            """, version, frozen.frozenRev, payload != nil, payload?.title, payload?.body,
            payload?.folderID?.description, frozen.change.entityID)
    }

    private func settleFolderApplied(_ db: Connection, _ frozen: FrozenRow, version: Int64) throws {
        let payload = frozen.change.folder
        try db.run(
            """
            UPDATE folders SET server_version = ?, synced_rev = ?, base_exists = ?, base_name = ?,
                base_parent_id = ? WHERE id = ?
            """, version, frozen.frozenRev, payload != nil, payload?.name, payload?.parentID?.description,
            frozen.change.entityID)
    }

    private func settleNoteConflict(
        _ db: Connection, _ frozen: FrozenRow, current: RemoteEntity?, commit: inout StoreCommit
    ) throws -> SettleReport {
        var report = SettleReport()
        guard let id = NoteID(frozen.change.entityID), let row = try NoteRow.load(db, id: id) else { return report }
        let remote = current.flatMap { $0.deleted ? nil : $0.note }
        let local = row.deleted ? nil : row.content
        let merged = Self.keepingConflictCopiesWhole(row, configuration.mergeNote(row.base, local, remote))
        try dropPending(db, kind: .note, id: row.id.description)
        try writeNote(db, row, to: merged.result, server: current, trash: .deletedElsewhere, commit: &commit)
        if let result = merged.result, result != remote {
            try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE id = ?", row.id.description)
            try enqueue(db, kind: .note, id: row.id.description, op: "put", commit: &commit)
            report.requeued = true
        } else if merged.result == nil, current != nil, current?.deleted == false {
            // Unreachable with edit-beats-delete merges; kept so a custom merge
            // that deletes still converges by sending the delete.
            try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE id = ?", row.id.description)
            try enqueue(db, kind: .note, id: row.id.description, op: "delete", commit: &commit)
            report.requeued = true
        }
        if let copy = merged.conflictCopy {
            report.conflictCopy = try keepInConflictCopy(
                db, of: row, text: copy, besides: merged.result?.body ?? Data(), commit: &commit)
        }
        return report
    }

    /// Writes a note's new state after a settle or pull: content (nil = deleted),
    /// the server's copy as base and version, clean. Moves the mtime forward so
    /// an editor holding old text notices. A live note this deletes goes to
    /// the trash when `trash` says from where.
    func writeNote(
        _ db: Connection, _ row: NoteRow, to content: NoteContent?, server: RemoteEntity?, trash: TrashOrigin?,
        commit: inout StoreCommit
    ) throws {
        let serverNote = server.flatMap { $0.deleted ? nil : $0.note }
        if server == nil && content == nil {
            if let trash, !row.deleted { try addToTrash(db, row, origin: trash) }
            try removeName(db, entry: .note(row.id), commit: &commit)
            try forgetTombstone(db, row)
            commit.changedEntries.insert(.note(row.id))
            return
        }
        let final = content ?? row.content
        let modified = max(now, row.updatedNanoseconds + 1)
        let changed = content == nil ? !row.deleted : (row.deleted || final != row.content)
        try db.run(
            """
            UPDATE notes SET title = ?, body = ?, folder_id = ?, deleted = ?, updated_ns = ?,
                server_version = ?, base_exists = ?, base_title = ?, base_body = ?, base_folder_id = ?,
                synced_rev = local_rev WHERE seq = ?
            """, final.title, final.body, final.folderID?.description, content == nil,
            changed ? modified : row.updatedNanoseconds, server?.version, serverNote != nil, serverNote?.title,
            serverNote?.body, serverNote?.folderID?.description, row.seq)
        guard changed else { return }
        if final.body != row.body {
            // Also when a pulled deletion is undone by a pulled edit: a
            // program that read the note before the deletion still holds its
            // inode (the row keeps its last text), and writes through it must
            // be judged against that text, not applied over the new one.
            kernelViews.recordChange(of: row.id, replaced: row.body)
        }
        commit.changedEntries.insert(.note(row.id))
        if content == nil {
            if let trash { try addToTrash(db, row, origin: trash) }
            try removeName(db, entry: .note(row.id), commit: &commit)
        } else {
            let directory = try displayDirectory(db, folderID: final.folderID)
            try placeName(db, entry: .note(row.id), in: directory, source: final.title, commit: &commit)
        }
    }

    private func settleNoteRefused(
        _ db: Connection, _ frozen: FrozenRow, reason: String, commit: inout StoreCommit
    ) throws -> SettleReport {
        var report = SettleReport()
        guard let id = NoteID(frozen.change.entityID), let row = try NoteRow.load(db, id: id) else { return report }
        try dropPending(db, kind: .note, id: row.id.description)
        var copySeq: Int64?
        if !row.deleted {
            // The current row, not the frozen payload: edits typed after the freeze are kept too.
            let directory = try NameRow.find(db, entry: .note(row.id))?.directory
                ?? displayDirectory(db, folderID: row.folderID)
            let name = ConflictPolicy.notSyncedTitle(
                for: NameCodec.displayName(forTitle: row.title, inRoot: directory == .root))
            copySeq = try insertLocal(
                db, kind: .file, in: directory, name: name, data: row.body, mode: row.mode,
                origin: LocalOrigin.refused, commit: &commit)
            report.keptAs = try NameRow.find(db, entry: .local(copySeq ?? 0))?.name
        }
        try db.run(
            "INSERT INTO refusals(entity_kind, entity_id, title, reason, copy_seq, at_ns) VALUES ('note', ?, ?, ?, ?, ?)",
            row.id.description, row.title, reason, copySeq, now)
        let server: RemoteEntity? =
            row.serverVersion.map { version in
                RemoteEntity(kind: .note, entityID: row.id.description, version: version, deleted: row.base == nil,
                             note: row.base)
            }
        // The text lives on in the local-only copy: not into the trash.
        try writeNote(db, row, to: row.base, server: server, trash: nil, commit: &commit)
        return report
    }

    private func settleFolderConflict(
        _ db: Connection, _ frozen: FrozenRow, current: RemoteEntity?, commit: inout StoreCommit
    ) throws {
        guard let id = FolderID(frozen.change.entityID), let row = try FolderRow.load(db, id: id) else { return }
        let remote = current.flatMap { $0.deleted ? nil : $0.folder }
        let local = row.deleted ? nil : row.content
        let result = ConflictPolicy.mergeFolder(base: row.base, local: local, remote: remote)
        try dropPending(db, kind: .folder, id: row.id.description)
        try writeFolder(db, row, to: result, server: current, commit: &commit)
        if let result, result != remote {
            try db.run("UPDATE folders SET local_rev = local_rev + 1 WHERE id = ?", row.id.description)
            try enqueue(db, kind: .folder, id: row.id.description, op: "put", commit: &commit)
        } else if result == nil, remote != nil {
            // Our delete stands (the server's copy equals our base): send it on the server's version.
            try db.run("UPDATE folders SET local_rev = local_rev + 1 WHERE id = ?", row.id.description)
            try enqueue(db, kind: .folder, id: row.id.description, op: "delete", commit: &commit)
        }
    }

    private func settleFolderRefused(
        _ db: Connection, _ frozen: FrozenRow, reason: String, commit: inout StoreCommit
    ) throws {
        guard let id = FolderID(frozen.change.entityID), let row = try FolderRow.load(db, id: id) else { return }
        try dropPending(db, kind: .folder, id: row.id.description)
        try db.run(
            "INSERT INTO refusals(entity_kind, entity_id, title, reason, at_ns) VALUES ('folder', ?, ?, ?, ?)",
            row.id.description, row.name, reason, now)
        let server: RemoteEntity? = row.serverVersion.map { version in
            RemoteEntity(kind: .folder, entityID: row.id.description, version: version, deleted: row.base == nil,
                         folder: row.base)
        }
        // Undo the refused move (or creation) locally.
        try writeFolder(db, row, to: row.base, server: server, commit: &commit)
    }

    /// Writes a folder's new state after a settle or pull (nil = deleted), clean.
    func writeFolder(
        _ db: Connection, _ row: FolderRow, to content: FolderContent?, server: RemoteEntity?,
        commit: inout StoreCommit
    ) throws {
        let serverFolder = server.flatMap { $0.deleted ? nil : $0.folder }
        let final = content ?? row.content
        let changed = content == nil ? !row.deleted : (row.deleted || final != row.content)
        if content == nil {
            try keepLocalChildren(db, of: row, commit: &commit)
        }
        if server == nil && content == nil {
            try removeName(db, entry: .folder(row.id), commit: &commit)
            try db.run("DELETE FROM folders WHERE seq = ?", row.seq)
        } else {
            try db.run(
                """
                UPDATE folders SET name = ?, parent_id = ?, deleted = ?, updated_ns = ?, server_version = ?,
                    base_exists = ?, base_name = ?, base_parent_id = ?, synced_rev = local_rev WHERE seq = ?
                """, final.name, final.parentID?.description, content == nil,
                changed ? max(now, row.updatedNanoseconds + 1) : row.updatedNanoseconds, server?.version,
                serverFolder != nil, serverFolder?.name, serverFolder?.parentID?.description, row.seq)
        }
        guard changed else { return }
        commit.changedEntries.insert(.folder(row.id))
        if content == nil {
            try removeName(db, entry: .folder(row.id), commit: &commit)
        } else {
            let directory = try displayDirectory(db, folderID: final.parentID)
            try placeName(db, entry: .folder(row.id), in: directory, source: final.name, commit: &commit)
        }
        try replaceChildren(of: row.id, db, commit: &commit)
    }

    /// A folder deleted elsewhere while this machine keeps local-only entries in
    /// it stays as a local-only directory holding them.
    private func keepLocalChildren(_ db: Connection, of row: FolderRow, commit: inout StoreCommit) throws {
        let key = DirectoryRef.folder(row.id).key
        let hasLocal = try db.queryOne(
            "SELECT 1 FROM names WHERE parent_key = ? AND entry_kind = 'local' LIMIT 1", key) { _ in true } ?? false
        guard hasLocal, let shown = try NameRow.find(db, entry: .folder(row.id)) else { return }
        try removeName(db, entry: .folder(row.id), commit: &commit)
        let seq = try insertLocal(
            db, kind: .directory, in: shown.directory, name: shown.name, mode: row.mode, commit: &commit)
        try db.run(
            "UPDATE names SET parent_key = ? WHERE parent_key = ? AND entry_kind = 'local'",
            DirectoryRef.local(seq).key, key)
        try repointInode(db, from: .folder(row.id), to: .local(seq))
    }
}
