import Foundation
import NotesModel
import SQLiteKit

/// What a rebind to another server or account queued.
public struct RebindReport: Sendable, Equatable {
    /// Live notes queued as creates.
    public var notes = 0
    /// Live folders queued as creates.
    public var folders = 0
    public init() {}
}

// Moving a profile to another server or account (`notesfs sync --rebind`).
extension NotesStore {
    /// Binds this store to another server and account, keeping every note and
    /// folder with its id and text: the cursor and every server version and
    /// base are forgotten, and every live note and folder is queued as a
    /// create (null base). Where the new server already holds the same id,
    /// the push meets a conflict and merges as usual, so nothing is doubled.
    /// Local tombstones have nothing to tell the new server and are settled.
    /// The store is bound to the token `tokenID` with no account yet: the
    /// first answer to that token names the account (`confirmAccount`).
    @discardableResult
    func rebindServer(url: String, tokenID: String?) throws(StoreError) -> RebindReport {
        try write(origin: .local, checkSpace: false) { db, commit in
            try db.run(
                """
                UPDATE sync_state SET server_url = ?, account_id = NULL, account_token_id = ?, cursor = NULL,
                    last_failed = 0, last_error = NULL, allow_mass_delete = 0
                WHERE id = 1
                """, url, tokenID)
            try db.run("DELETE FROM outbox")
            // Deletions held from the old server must never remove a note the
            // new one is about to receive. The guard's window stays: a mass
            // delete spanning the move is still counted whole.
            try db.run("DELETE FROM held_pulls")
            for table in ["folders", "notes"] {
                try db.run(
                    "UPDATE \(table) SET server_version = NULL, base_exists = 0, synced_rev = local_rev WHERE deleted = 1")
                try db.run(
                    """
                    UPDATE \(table) SET server_version = NULL, base_exists = 0, local_rev = max(local_rev, synced_rev) + 1
                    WHERE deleted = 0
                    """)
            }
            var report = RebindReport()
            // A row whose id is not a UUID is skipped, as `NoteRow` skips it.
            let folders = try db.query("SELECT id FROM folders WHERE deleted = 0 ORDER BY seq") {
                FolderID($0.string(0))
            }.compactMap { $0 }
            for id in folders { try enqueue(db, .folder(id), .put, commit: &commit) }
            let notes = try db.query("SELECT id FROM notes WHERE deleted = 0 ORDER BY seq") {
                NoteID($0.string(0))
            }.compactMap { $0 }
            for id in notes { try enqueue(db, .note(id), .put, commit: &commit) }
            report.folders = folders.count
            report.notes = notes.count
            commit.outboxChanged = true
            return report
        }
    }
}
