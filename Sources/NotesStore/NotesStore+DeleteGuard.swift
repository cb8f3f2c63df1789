import Foundation
import NotesModel
import SQLiteKit

/// What the mass-delete guard holds: shown by status, given as the reason of a
/// held sync run, and printed by `notesfs sync`.
public struct MassDeleteHold: Sendable, Equatable {
    /// When the guard tripped; nil when nothing is held.
    public var sinceNanoseconds: Int64?
    /// The notes counted as deleted in the window when it tripped, and the
    /// notes live at the window's start.
    public var trippedDeletions = 0
    public var trippedLive = 0
    /// Notes (with those inside held folders) and folders deleted on this
    /// machine whose deletions wait to be sent.
    public var notesToSend = 0
    public var foldersToSend = 0
    /// Notes (with those inside held folders) and folders deleted on another
    /// machine whose deletions wait to be applied here.
    public var notesToApply = 0
    public var foldersToApply = 0
    /// Notes deleted elsewhere that were removed here within the window
    /// before the guard tripped.
    public var removedHereBefore = 0

    public init() {}

    public var isHeld: Bool { sinceNanoseconds != nil }

    /// One paragraph: how many, why, in each direction, and what to run.
    public var description: String {
        guard isHeld else { return "No deletions are held." }
        var parts = [
            "Deletions held: \(trippedDeletions) of your \(trippedLive) notes were deleted within "
                + "\(NotesStore.massDeleteWindowMinutes) minutes, here or on another machine (more than half)."
        ]
        if notesToSend + foldersToSend > 0 {
            parts.append("Not sent: \(Self.count(notesToSend, foldersToSend)) deleted on this machine.")
        }
        if notesToApply + foldersToApply > 0 {
            var applied = "Not removed here: \(Self.count(notesToApply, foldersToApply)) deleted on another machine"
            applied +=
                removedHereBefore > 0
                ? " (\(removedHereBefore) deleted elsewhere were removed here before the hold)."
                : "; nothing deleted elsewhere was removed here in this window."
            parts.append(applied)
        }
        if notesToSend + foldersToSend + notesToApply + foldersToApply == 0 {
            parts.append("Nothing waits now, but further deletions are held until you answer.")
        }
        parts.append(
            "If you meant it, run: notesfs sync --allow-mass-delete; "
                + "to bring them back on every machine, run: notesfs sync --restore-held")
        return parts.joined(separator: " ")
    }

    static func count(_ notes: Int, _ folders: Int) -> String {
        var text = "\(notes) note\(notes == 1 ? "" : "s")"
        if folders > 0 { text += " and \(folders) folder\(folders == 1 ? "" : "s")" }
        return text
    }
}

/// What `notesfs sync --allow-mass-delete` released.
public struct MassDeleteRelease: Sendable, Equatable {
    /// Notes removed here now (deleted on another machine, held until now).
    public var removedHere = 0
    /// Deletions made here that may now be sent.
    public var toSend = 0

    public var summary: String {
        "Confirmed: \(removedHere) note\(removedHere == 1 ? "" : "s") deleted elsewhere removed here; "
            + "\(toSend) deletion\(toSend == 1 ? "" : "s") made here go to the server."
    }
}

/// What `notesfs sync --restore-held` brought back.
public struct MassDeleteRestore: Sendable, Equatable {
    /// Notes and folders deleted here whose deletions were held, live again.
    public var revivedHere = 0
    /// Notes and folders deleted elsewhere that are pushed back to the server.
    public var sentBack = 0

    public var summary: String {
        "Restored: \(revivedHere) deleted here \(revivedHere == 1 ? "is" : "are") back; "
            + "\(sentBack) deleted elsewhere \(sentBack == 1 ? "is" : "are") sent back to the server."
    }
}

// The mass-delete guard (docs/sync.md "The mass-delete guard"): deletions
// of notes and folders, pushed or pulled, over a rolling window are compared
// with the notes live at the window's start; beyond the bound every further
// deletion is held in both directions until the user confirms or restores.
extension NotesStore {
    /// The rolling window's length.
    public static let massDeleteWindowMinutes = 10
    static let massDeleteWindowNanoseconds = Int64(massDeleteWindowMinutes) * 60 * 1_000_000_000

    /// Below this many deletions the guard never holds anything.
    public static let massDeleteHandful = 5

    /// The bound: more than a handful, and more than half of `live`.
    public static func exceedsMassDeleteBound(deletions: Int, live: Int) -> Bool {
        deletions > massDeleteHandful && deletions * 2 > live
    }

    struct DeleteGuardState {
        /// Since when deletions are held; nil = not held.
        var heldSince: Int64?
        /// The last confirmation or restore: deletions made before it never count.
        var confirmed: Int64?

        var isHeld: Bool { heldSince != nil }

        /// True when a deletion made at `deletionTime` must wait.
        func holds(deletionMadeAt deletionTime: Int64) -> Bool {
            isHeld && deletionTime > (confirmed ?? Int64.min)
        }
    }

    func deleteGuardState(_ db: Connection) throws -> DeleteGuardState {
        try db.queryOne("SELECT held_since_ns, confirmed_ns FROM delete_guard WHERE id = 1") {
            DeleteGuardState(heldSince: $0.optionalInt64(0), confirmed: $0.optionalInt64(1))
        } ?? DeleteGuardState()
    }

    /// The window: deletions let through since `max(now − 10 min, last
    /// confirmation)`, plus every tombstone still waiting to be sent that was
    /// made after the last confirmation (however old: an offline `rm -rf`
    /// counts when it would go out); and the live notes at the window's
    /// start, taken as the notes live now plus those deletions.
    func deletionWindow(_ db: Connection, state: DeleteGuardState) throws -> (deletions: Int, liveAtStart: Int) {
        let start = max(now - Self.massDeleteWindowNanoseconds, state.confirmed ?? Int64.min)
        let logged =
            try db.queryOne("SELECT coalesce(sum(notes), 0) FROM deletion_log WHERE at_ns > ?", start) { $0.int(0) }
            ?? 0
        let pending = try pendingDeletionNotes(db, madeAfter: state.confirmed ?? Int64.min).notes
        let live = try db.queryOne("SELECT count(*) FROM notes WHERE deleted = 0") { $0.int(0) } ?? 0
        return (logged + pending, live + logged + pending)
    }

    /// Tombstones waiting to be sent that were made after `time`: notes, and
    /// folders (with the live notes still inside them).
    func pendingDeletionNotes(_ db: Connection, madeAfter time: Int64) throws -> (notes: Int, folders: Int) {
        let notes =
            try db.queryOne(
                """
                SELECT count(*) FROM outbox o JOIN notes n ON n.id = o.entity_id
                WHERE o.entity_kind = 'note' AND o.op = 'delete' AND o.state = 'pending'
                  AND n.deleted = 1 AND n.updated_ns > ?
                """, time
            ) { $0.int(0) } ?? 0
        let folders = try db.query(
            """
            SELECT f.id FROM outbox o JOIN folders f ON f.id = o.entity_id
            WHERE o.entity_kind = 'folder' AND o.op = 'delete' AND o.state = 'pending'
              AND f.deleted = 1 AND f.updated_ns > ?
            """, time
        ) { FolderID($0.string(0)) }.compactMap { $0 }
        var inside = Set<NoteID>()
        for folder in folders { inside.formUnion(try liveNotes(inFolder: folder, db)) }
        return (notes + inside.count, folders.count)
    }

    /// The live notes inside a folder and its subfolders, at any depth (a
    /// row whose id is not a UUID is skipped, as `NoteRow` skips it).
    func liveNotes(inFolder folderID: FolderID, _ db: Connection) throws -> Set<NoteID> {
        // UNION (not UNION ALL) stops at a folder seen before, so a cycle cannot loop.
        Set(
            try db.query(
                """
                WITH RECURSIVE tree(id) AS (
                    SELECT ? UNION SELECT f.id FROM folders f JOIN tree ON f.parent_id = tree.id
                )
                SELECT n.id FROM notes n JOIN tree ON n.folder_id = tree.id WHERE n.deleted = 0
                """, folderID
            ) { NoteID($0.string(0)) }.compactMap { $0 })
    }

    /// When the note or folder was deleted here (its tombstone's time).
    func deletionTime(_ db: Connection, _ ref: EntityRef) throws -> Int64 {
        let table = ref.kind == .note ? "notes" : "folders"
        return try db.queryOne("SELECT updated_ns FROM \(table) WHERE id = ?", ref.idText) { $0.int64(0) } ?? now
    }

    /// Trips the guard: from now on every further deletion is held.
    func tripDeleteGuard(_ db: Connection, deletions: Int, live: Int) throws {
        try db.run(
            """
            UPDATE delete_guard SET held_since_ns = ?, tripped_deletions = ?, tripped_live = ?
            WHERE id = 1 AND held_since_ns IS NULL
            """, now, deletions, live)
    }

    /// Before freezing a push: trips the guard when the window, with every
    /// tombstone waiting to go, is beyond the bound.
    func deleteGuardBeforePush(_ db: Connection) throws -> DeleteGuardState {
        let state = try deleteGuardState(db)
        guard !state.isHeld else { return state }
        let anyDeletion =
            try db.queryOne("SELECT 1 FROM outbox WHERE state = 'pending' AND op = 'delete' LIMIT 1") { _ in true }
            ?? false
        guard anyDeletion else { return state }
        let window = try deletionWindow(db, state: state)
        guard Self.exceedsMassDeleteBound(deletions: window.deletions, live: window.liveAtStart) else { return state }
        try tripDeleteGuard(db, deletions: window.deletions, live: window.liveAtStart)
        return try deleteGuardState(db)
    }

    /// Remembers a deletion let through, so later ones in the window count it.
    /// Entries older than the window are pruned on the way.
    func logDeletion(_ db: Connection, direction: String, _ ref: EntityRef, notes: Int, at time: Int64) throws {
        try db.run("DELETE FROM deletion_log WHERE at_ns < ?", now - Self.massDeleteWindowNanoseconds)
        try db.run(
            "INSERT INTO deletion_log(at_ns, direction, entity_kind, entity_id, notes) VALUES (?, ?, ?, ?, ?)", time,
            direction, ref.kind, ref.idText, notes)
    }

    /// Logs a tombstone that is being frozen (sent): at the time it was made,
    /// so one made before the last confirmation never counts again.
    func logPushedDeletion(_ db: Connection, _ ref: EntityRef) throws {
        let notes = try ref.folderID.map { try liveNotes(inFolder: $0, db).count } ?? 1
        try logDeletion(db, direction: "push", ref, notes: notes, at: try deletionTime(db, ref))
    }

    // MARK: Pulled deletions

    /// True when applying this pulled tombstone would delete a live, clean
    /// note or folder here (a dirty one is skipped anyway: the edit wins).
    func pulledDeletionRemovesLive(_ db: Connection, _ entity: RemoteEntity) throws -> Bool {
        guard entity.deleted else { return false }
        let serverVersion: Int64?
        if let id = entity.ref.noteID {
            guard let row = try NoteRow.load(db, id: id), !row.deleted, !row.isDirty else { return false }
            serverVersion = row.serverVersion
        } else if let id = entity.ref.folderID {
            guard let row = try FolderRow.load(db, id: id), !row.deleted, !row.isDirty else { return false }
            serverVersion = row.serverVersion
        } else {
            return false
        }
        if try hasOutbox(db, entity.ref) { return false }
        if let serverVersion, entity.version <= serverVersion { return false }
        return true
    }

    /// Which entities of a pulled page would delete something live here, and
    /// whether the guard holds them: tripping it when this page's deletions
    /// (a folder counted as the live notes inside it, each note once) take
    /// the window beyond the bound.
    func deleteGuardForPage(_ db: Connection, _ entities: [RemoteEntity]) throws -> (
        deletions: Set<Int>, held: Bool
    ) {
        var deletions = Set<Int>()
        var notes = Set<NoteID>()
        for (index, entity) in entities.enumerated() where entity.deleted {
            guard try pulledDeletionRemovesLive(db, entity) else { continue }
            deletions.insert(index)
            if let id = entity.ref.noteID { notes.insert(id) }
            if let id = entity.ref.folderID { notes.formUnion(try liveNotes(inFolder: id, db)) }
        }
        let state = try deleteGuardState(db)
        if deletions.isEmpty || state.isHeld { return (deletions, state.isHeld) }
        let window = try deletionWindow(db, state: state)
        let total = window.deletions + notes.count
        guard Self.exceedsMassDeleteBound(deletions: total, live: window.liveAtStart) else { return (deletions, false) }
        try tripDeleteGuard(db, deletions: total, live: window.liveAtStart)
        return (deletions, true)
    }

    /// Keeps a pulled tombstone aside instead of applying it.
    func holdPulledDeletion(_ db: Connection, _ entity: RemoteEntity) throws {
        try db.run(
            """
            INSERT INTO held_pulls(entity_kind, entity_id, version, held_ns) VALUES (?, ?, ?, ?)
            ON CONFLICT(entity_kind, entity_id) DO UPDATE SET version = max(version, excluded.version)
            """, entity.kind, entity.ref.idText, entity.version, now)
    }

    /// Held pulled tombstones that still mean something: the entity is live
    /// here and the tombstone is newer than what this machine has (a later
    /// edit that revived it makes the tombstone stale), in the feed's order.
    func effectiveHeldPulls(_ db: Connection) throws -> [(ref: EntityRef, version: Int64)] {
        try db.query(
            """
            SELECT h.entity_kind, h.entity_id, h.version FROM held_pulls h
            WHERE (h.entity_kind = 'note' AND EXISTS (SELECT 1 FROM notes n WHERE n.id = h.entity_id
                     AND n.deleted = 0 AND ifnull(n.server_version, -1) < h.version))
               OR (h.entity_kind = 'folder' AND EXISTS (SELECT 1 FROM folders f WHERE f.id = h.entity_id
                     AND f.deleted = 0 AND ifnull(f.server_version, -1) < h.version))
            ORDER BY h.seq
            """
        ) { row in
            (try row.entityRef(kind: 0, id: 1, in: "held_pulls"), row.int64(2))
        }
    }
}
