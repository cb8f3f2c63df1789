import Foundation
import NotesModel
import SQLiteKit

// Conflict copies: at most one per note and device. The copy holding this
// device's side of a clash on note N has the id `conflictCopyID(of: N,
// device:)`; a further clash puts its text into that copy (every line of the
// old copy and of the new text kept), and a copy deleted anywhere (resolved)
// comes back under the same id at the next clash. The copy is an ordinary
// synced note: other machines may edit or delete it, and an edit beats a
// delete as for any note. A clash on a conflict copy itself keeps every line
// of both sides in the copy instead of making a copy of the copy.
extension NotesStore {
    /// This device's id, read inside the caller's transaction.
    func deviceID(_ db: Connection) throws -> DeviceID {
        let stored = try db.query("SELECT device_id FROM sync_state WHERE id = 1") {
            DeviceID(try $0.uuid(0, in: "sync_state"))
        }
        guard let id = stored.first else { throw StoreError.notFound("this device's id in the sync state") }
        return id
    }

    /// The id of note `note`'s conflict copy made on this device.
    func conflictCopyID(_ db: Connection, of note: NoteID) throws -> NoteID {
        configuration.conflictCopyID(note, try deviceID(db))
    }

    /// True for a conflict copy: made here (it names its note), or by its title.
    static func isConflictCopy(_ row: NoteRow) -> Bool {
        row.conflictOf != nil || ConflictPolicy.looksLikeConflictCopy(row.title)
    }

    /// A merge of a conflict copy keeps every line of both sides in the copy
    /// (server's lines first where they differ) rather than making a copy of it.
    static func keepingConflictCopiesWhole(
        _ row: NoteRow, _ merged: (result: NoteContent?, conflictCopy: NoteContent?)
    ) -> (result: NoteContent?, conflictCopy: NoteContent?) {
        guard isConflictCopy(row), let copy = merged.conflictCopy, var result = merged.result else { return merged }
        result.body = ConflictPolicy.updatedConflictCopy(old: result.body, new: copy.body)
        return (result, nil)
    }

    /// Keeps `text`, this device's side of a clash on `note` that lost to
    /// `noteBody`, in the note's conflict copy: nothing when every line of it
    /// is in the note already, or in the copy. Returns the copy's id when it
    /// was made or changed.
    func keepInConflictCopy(
        _ db: Connection, of note: NoteRow, text: NoteContent, besides noteBody: Data, commit: inout StoreCommit
    ) throws -> NoteID? {
        if TextMerge.containsEveryLine(of: text.body, in: noteBody) { return nil }
        let copyID = try conflictCopyID(db, of: note.id)
        let existing = try NoteRow.load(db, id: copyID)
        if let existing, !existing.deleted {
            let body = ConflictPolicy.updatedConflictCopy(old: existing.body, new: text.body)
            guard body != existing.body else { return nil }
            return try putConflictCopy(db, copyID, of: note, template: text, body: body, commit: &commit)
        }
        return try putConflictCopy(db, copyID, of: note, template: text, body: text.body, commit: &commit)
    }

    /// Sets the body of `note`'s conflict copy `copyID` from this device: an edit of the
    /// live copy (its title and folder as they are now), or a new copy named
    /// `<stem> (conflicted copy <device> <date>)<ext>` from `template`'s title
    /// and folder, revived under the same id if an earlier copy was deleted.
    /// Returns the copy's id.
    @discardableResult
    func putConflictCopy(
        _ db: Connection, _ copyID: NoteID, of note: NoteRow, template: NoteContent, body: Data,
        commit: inout StoreCommit
    ) throws -> NoteID {
        var (copyID, body) = (copyID, body)
        var existing = try NoteRow.load(db, id: copyID)
        if body.count > configuration.noteSizeLimitBytes {
            // The lines of every clash no longer fit in one note: this
            // clash's text gets a copy of its own (the one exception to one
            // copy per note and device), so nothing is lost and the settle
            // or save never fails.
            (copyID, body, existing) = (NoteID(newUUID()), template.body, nil)
        }
        if let existing, !existing.deleted {
            var content = existing.content
            content.body = body
            try editNote(db, existing, to: content, modified: max(now, existing.updatedNanoseconds + 1), commit: &commit)
            // The copy changed behind any program holding it open (the clash
            // came from a sync or from a write to the note, not to the copy).
            kernelViews.recordChange(of: copyID, replaced: existing.body)
            commit.changedBehindRequest.insert(.note(copyID))
        } else {
            let device = try db.queryOne("SELECT device_name FROM sync_state WHERE id = 1") { $0.string(0) }
                ?? configuration.defaultDeviceName
            let date = Date(timeIntervalSince1970: Double(now) / 1e9)
            let content = NoteContent(
                title: ConflictPolicy.conflictCopyTitle(for: template.title, device: device, date: date), body: body,
                folderID: template.folderID)
            if let existing {
                try reviveNote(db, existing, content: content, commit: &commit)
            } else {
                try insertNote(db, id: copyID, content: content, conflictOf: note.id, commit: &commit)
            }
        }
        try db.run("UPDATE notes SET conflict_of = ? WHERE id = ?", note.id.description, copyID.description)
        return copyID
    }
}
