import Foundation
import NotesModel
import SQLiteKit

// The outbox's sending side: freezing pending rows into changes to send, and
// what a failed send records. The answers are settled in
// NotesStore+Settle.swift, exactly as DESIGN.md "Settling a sent change" says.
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
            ) { row in
                (seq: row.int64(0), ref: try row.entityRef(kind: 1, id: 2, in: "outbox"),
                 operation: try row.changeOperation(3))
            }
            for row in pending {
                guard batch.count < maxCount else { break }
                if row.operation == .delete, deleteGuard.holds(deletionMadeAt: try deletionTime(db, row.ref)) {
                    continue
                }
                if try !batch.isEmpty && bytes + payloadSize(db, row.ref) > maxBytes {
                    break
                }
                guard let change = try freeze(db, seq: row.seq, ref: row.ref) else { continue }
                if change.isDelete { try logPushedDeletion(db, change.ref) }
                bytes += change.payloadBytes
                batch.append(change)
            }
            return try Self.parentsFirst(db, batch)
        }
    }

    /// The payload size `freeze` would produce, without freezing.
    private func payloadSize(_ db: Connection, _ ref: EntityRef) throws -> Int {
        let sql =
            ref.kind == .note
            ? "SELECT CASE deleted WHEN 1 THEN 0 ELSE body_size + length(CAST(title AS BLOB)) END FROM notes WHERE id = ?"
            : "SELECT CASE deleted WHEN 1 THEN 0 ELSE length(CAST(name AS BLOB)) END FROM folders WHERE id = ?"
        return (try db.queryOne(sql, ref.idText) { $0.int(0) } ?? 0) + 128
    }

    /// Rows already in flight (after a crash, or a batch cut short), unchanged.
    /// `onlySeq` reads just that row (freezing and settling one change must
    /// not reload every frozen payload: that made a 10,000-note upload quadratic).
    func inFlight(_ db: Connection, onlySeq: Int64? = nil) throws -> [OutgoingChange] {
        let columns = """
            SELECT change_id, entity_kind, entity_id, op, base_version, payload_title, payload_body,
                   payload_folder_id, payload_name, payload_parent_id, attempts FROM outbox
            """
        let sql = onlySeq == nil
            ? columns + " WHERE state = 'in_flight' ORDER BY seq"
            : columns + " WHERE seq = ? AND state = 'in_flight'"
        return try db.query(sql, arguments: onlySeq.map { [$0] } ?? []) { row -> OutgoingChange in
            let ref = try row.entityRef(kind: 1, id: 2, in: "outbox")
            let operation = try row.changeOperation(3)
            var change = OutgoingChange(
                changeID: try row.changeID(0, in: "outbox"), ref: ref, operation: operation,
                baseVersion: row.optionalInt64(4), note: nil, folder: nil, attempts: row.int(10))
            if operation == .put {
                switch ref.kind {
                case .note:
                    change.note = NoteContent(
                        title: row.string(5), body: row.data(6),
                        folderID: try row.optionalUUID(7, in: "outbox").map(FolderID.init))
                case .folder:
                    change.folder = FolderContent(
                        name: row.string(8), parentID: try row.optionalUUID(9, in: "outbox").map(FolderID.init))
                }
            }
            return change
        }
    }

    /// Copies the entity's current state into its pending row and marks it in
    /// flight; a row whose entity is gone is dropped (nil).
    private func freeze(_ db: Connection, seq: Int64, ref: EntityRef) throws -> OutgoingChange? {
        switch ref.kind {
        case .note:
            guard let row = try NoteRow.load(db, id: NoteID(ref.id)) else {
                try db.run("DELETE FROM outbox WHERE seq = ?", seq)
                return nil
            }
            let operation: ChangeOperation = row.deleted ? .delete : .put
            try db.run(
                """
                UPDATE outbox SET state = 'in_flight', op = ?, frozen_rev = ?, base_version = ?,
                    payload_title = ?, payload_body = ?, payload_folder_id = ? WHERE seq = ?
                """, operation, row.localRev, row.serverVersion, row.deleted ? nil : row.title,
                row.deleted ? nil : row.body, row.deleted ? nil : row.folderID, seq)
        case .folder:
            guard let row = try FolderRow.load(db, id: FolderID(ref.id)) else {
                try db.run("DELETE FROM outbox WHERE seq = ?", seq)
                return nil
            }
            let operation: ChangeOperation = row.deleted ? .delete : .put
            try db.run(
                """
                UPDATE outbox SET state = 'in_flight', op = ?, frozen_rev = ?, base_version = ?,
                    payload_name = ?, payload_parent_id = ? WHERE seq = ?
                """, operation, row.localRev, row.serverVersion, row.deleted ? nil : row.name,
                row.deleted ? nil : row.parentID, seq)
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
            switch (change.kind, change.operation) {
            case (.folder, .put): folderPuts.append((try depth(change), change))
            case (.folder, .delete): folderDeletes.append(change)
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
                try db.run("UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE change_id = ?", error, id)
            }
        }
    }

    /// Gives an in-flight change a new change id (after the server said the id
    /// was reused with another payload). The payload stays frozen.
    func renewChangeID(_ changeID: ChangeID) throws(StoreError) -> ChangeID {
        try write(origin: .local, checkSpace: false) { db, _ in
            let fresh = ChangeID(newUUID())
            try db.run(
                "UPDATE outbox SET change_id = ? WHERE change_id = ? AND state = 'in_flight'", fresh, changeID)
            return fresh
        }
    }
}
