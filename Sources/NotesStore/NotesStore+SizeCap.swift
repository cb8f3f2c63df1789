import Foundation
import NotesModel
import SQLiteKit

// The size cap. A write that would take a note past it fails with EFBIG and
// stores nothing, but the writes before it did land: a 17 MiB copy leaves the
// first 16 MiB. That note is not what its writer meant, so when the refused
// write continues a save (the note changed in the last `oversizeSaveSeconds`)
// the note is held back from sync (its change stays pending here) until it is
// made smaller than it was when the write was refused, or deleted. No
// truncated copy reaches the other machines, and status names the note and
// says why. A refused write into a note nobody was writing (`truncate -s 20M`
// on an old note) changed nothing, and holds nothing.
extension NotesStore {
    /// Part of an `UPDATE notes` that releases the hold when the note's new
    /// size (the one bound argument) is below the size it was held at.
    static let releaseOversizeHoldSQL =
        "over_cap_size = CASE WHEN over_cap_size > ? THEN 0 ELSE over_cap_size END"

    /// How recently a note must have changed for a refused write to count as
    /// cutting a save short.
    static let oversizeSaveSeconds: Int64 = 10

    /// Holds a note back from sync after a write that continued a save was
    /// refused for size.
    func holdIfOversized(_ ref: EntryRef, after error: StoreError) throws(StoreError) {
        guard case .tooLarge = error, case .note(let id) = ref else { return }
        try write(origin: .local, checkSpace: false) { db, commit in
            try db.run(
                """
                UPDATE notes SET over_cap_size = max(body_size, 1)
                WHERE id = ? AND deleted = 0 AND over_cap_size = 0 AND body_size > 0 AND updated_ns >= ?
                """, id.description, now - Self.oversizeSaveSeconds * 1_000_000_000)
            if db.changes > 0 {
                // Status shows the hold; nothing about the note itself changed.
                commit.outboxChanged = true
            }
        }
    }

    /// SQL that is true for an outbox row `alias` whose note is held back for size.
    static func heldForSizeSQL(outbox alias: String) -> String {
        """
        (\(alias).entity_kind = 'note' AND EXISTS (SELECT 1 FROM notes h
          WHERE h.id = \(alias).entity_id AND h.deleted = 0 AND h.over_cap_size > 0))
        """
    }

    /// Notes held back from sync because a write tried to take them past the cap.
    func notesHeldForSize(_ db: Connection) throws -> [String] {
        let ids = try db.query("SELECT id, title FROM notes WHERE over_cap_size > 0 AND deleted = 0 ORDER BY seq") {
            (NoteID($0.string(0)), $0.string(1))
        }
        return try ids.map { id, title in
            try id.flatMap { try path(db, of: .note($0)) } ?? title
        }
    }
}
