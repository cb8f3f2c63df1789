import Foundation
import NotesModel
import SQLiteKit

// Writing the server's state of a note or folder into its row, clean: the
// end of a settle, a pull or a resync.
extension NotesStore {
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
            """, final.title, final.body, final.folderID, content == nil,
            changed ? modified : row.updatedNanoseconds, server?.version, serverNote != nil, serverNote?.title,
            serverNote?.body, serverNote?.folderID, row.seq)
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
                """, final.name, final.parentID, content == nil,
                changed ? max(now, row.updatedNanoseconds + 1) : row.updatedNanoseconds, server?.version,
                serverFolder != nil, serverFolder?.name, serverFolder?.parentID, row.seq)
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
            db, kind: .directory, in: shown.directory, name: shown.name, mode: row.mode, commit: &commit).seq
        try db.run(
            "UPDATE names SET parent_key = ? WHERE parent_key = ? AND entry_kind = 'local'",
            DirectoryRef.local(seq).key, key)
        try repointInode(db, from: .folder(row.id), to: .local(seq))
    }
}
