import Foundation
import NotesModel
import SQLiteKit

// Settling the server's answers to sent changes, exactly as DESIGN.md
// "Settling a sent change" says: applied, conflict (merged on the current
// row), refused (the text kept as a local-only file).
extension NotesStore {
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
                changeID, map: { ($0.int64(0), $0.int64(1)) }),
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
            """, version, frozen.frozenRev, payload != nil, payload?.title, payload?.body, payload?.folderID,
            frozen.change.ref.idText)
    }

    private func settleFolderApplied(_ db: Connection, _ frozen: FrozenRow, version: Int64) throws {
        let payload = frozen.change.folder
        try db.run(
            """
            UPDATE folders SET server_version = ?, synced_rev = ?, base_exists = ?, base_name = ?,
                base_parent_id = ? WHERE id = ?
            """, version, frozen.frozenRev, payload != nil, payload?.name, payload?.parentID, frozen.change.ref.idText)
    }

    private func settleNoteConflict(
        _ db: Connection, _ frozen: FrozenRow, current: RemoteEntity?, commit: inout StoreCommit
    ) throws -> SettleReport {
        var report = SettleReport()
        guard let id = frozen.change.ref.noteID, let row = try NoteRow.load(db, id: id) else { return report }
        let remote = current.flatMap { $0.deleted ? nil : $0.note }
        let local = row.deleted ? nil : row.content
        let merged = Self.keepingConflictCopiesWhole(row, configuration.mergeNote(row.base, local, remote))
        try dropPending(db, .note(row.id))
        try writeNote(db, row, to: merged.result, server: current, trash: .deletedElsewhere, commit: &commit)
        if let result = merged.result, result != remote {
            try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE id = ?", row.id)
            try enqueue(db, .note(row.id), .put, commit: &commit)
            report.requeued = true
        } else if merged.result == nil, current != nil, current?.deleted == false {
            // Unreachable with edit-beats-delete merges; kept so a custom merge
            // that deletes still converges by sending the delete.
            try db.run("UPDATE notes SET local_rev = local_rev + 1 WHERE id = ?", row.id)
            try enqueue(db, .note(row.id), .delete, commit: &commit)
            report.requeued = true
        }
        if let copy = merged.conflictCopy {
            report.conflictCopy = try keepInConflictCopy(
                db, of: row, text: copy, besides: merged.result?.body ?? Data(), commit: &commit)
        }
        return report
    }


    private func settleNoteRefused(
        _ db: Connection, _ frozen: FrozenRow, reason: String, commit: inout StoreCommit
    ) throws -> SettleReport {
        var report = SettleReport()
        guard let id = frozen.change.ref.noteID, let row = try NoteRow.load(db, id: id) else { return report }
        try dropPending(db, .note(row.id))
        var copySeq: Int64?
        if !row.deleted {
            // The current row, not the frozen payload: edits typed after the freeze are kept too.
            let directory = try NameRow.find(db, entry: .note(row.id))?.directory
                ?? displayDirectory(db, folderID: row.folderID)
            let name = ConflictPolicy.notSyncedTitle(
                for: NameCodec.displayName(forTitle: row.title, inRoot: directory == .root))
            let copy = try insertLocal(
                db, kind: .file, in: directory, name: name, data: row.body, mode: row.mode,
                origin: LocalOrigin.refused, commit: &commit)
            copySeq = copy.seq
            report.keptAs = copy.entry.name
        }
        try db.run(
            "INSERT INTO refusals(entity_kind, entity_id, title, reason, copy_seq, at_ns) VALUES ('note', ?, ?, ?, ?, ?)",
            row.id, row.title, reason, copySeq, now)
        let server: RemoteEntity? =
            row.serverVersion.map { version in
                RemoteEntity(.note(row.id), version: version, deleted: row.base == nil, note: row.base)
            }
        // The text lives on in the local-only copy: not into the trash.
        try writeNote(db, row, to: row.base, server: server, trash: nil, commit: &commit)
        return report
    }

    private func settleFolderConflict(
        _ db: Connection, _ frozen: FrozenRow, current: RemoteEntity?, commit: inout StoreCommit
    ) throws {
        guard let id = frozen.change.ref.folderID, let row = try FolderRow.load(db, id: id) else { return }
        let remote = current.flatMap { $0.deleted ? nil : $0.folder }
        let local = row.deleted ? nil : row.content
        let result = ConflictPolicy.mergeFolder(base: row.base, local: local, remote: remote)
        try dropPending(db, .folder(row.id))
        try writeFolder(db, row, to: result, server: current, commit: &commit)
        if let result, result != remote {
            try db.run("UPDATE folders SET local_rev = local_rev + 1 WHERE id = ?", row.id)
            try enqueue(db, .folder(row.id), .put, commit: &commit)
        } else if result == nil, remote != nil {
            // Our delete stands (the server's copy equals our base): send it on the server's version.
            try db.run("UPDATE folders SET local_rev = local_rev + 1 WHERE id = ?", row.id)
            try enqueue(db, .folder(row.id), .delete, commit: &commit)
        }
    }

    private func settleFolderRefused(
        _ db: Connection, _ frozen: FrozenRow, reason: String, commit: inout StoreCommit
    ) throws {
        guard let id = frozen.change.ref.folderID, let row = try FolderRow.load(db, id: id) else { return }
        try dropPending(db, .folder(row.id))
        try db.run(
            "INSERT INTO refusals(entity_kind, entity_id, title, reason, at_ns) VALUES ('folder', ?, ?, ?, ?)",
            row.id, row.name, reason, now)
        let server: RemoteEntity? = row.serverVersion.map { version in
            RemoteEntity(.folder(row.id), version: version, deleted: row.base == nil, folder: row.base)
        }
        // Undo the refused move (or creation) locally.
        try writeFolder(db, row, to: row.base, server: server, commit: &commit)
    }

}
