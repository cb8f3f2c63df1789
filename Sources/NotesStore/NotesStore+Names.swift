import Foundation
import NotesModel
import SQLiteKit

// The `names` table is the directory: one row per name shown. Names are sticky:
// an entry keeps its name until its own title or folder changes, and a
// newcomer whose name is taken gets the lowest free " (n)" suffix.
extension NotesStore {
    /// The directory a note or folder is shown in: its folder when that folder
    /// is live here, else the root.
    func displayDirectory(_ db: Connection, folderID: FolderID?) throws -> DirectoryRef {
        guard let folderID else { return .root }
        let live =
            try db.queryOne("SELECT 1 FROM folders WHERE id = ? AND deleted = 0", folderID.description) { _ in true }
            ?? false
        return FolderTree.displayedFolder(of: folderID) { _ in live }.map(DirectoryRef.folder) ?? .root
    }

    /// Gives `entry` a name in `directory` derived from `source` (a title or
    /// folder name), keeping its current name when neither changed. Returns
    /// the name and its readdir cookie. `isNew`: the entry was made in this
    /// transaction and has no name yet; `freeName`: a name the caller found
    /// free in `directory` in this transaction.
    @discardableResult
    func placeName(
        _ db: Connection, entry: EntryRef, in directory: DirectoryRef, source: String, isNew: Bool = false,
        freeName: String? = nil, isDirectory knownDirectory: Bool? = nil, commit: inout StoreCommit
    ) throws -> (name: String, cookie: Int64) {
        if !isNew, let existing = try NameRow.find(db, entry: entry) {
            if existing.directory == directory && existing.source == source { return (existing.name, existing.seq) }
            try removeName(db, entry: entry, commit: &commit)
        }
        let base: String
        if case .local = entry {
            base = source
        } else {
            base = NameCodec.displayName(forTitle: source, inRoot: directory == .root)
        }
        let name = DisplayNames.lowestFree(base) { candidate in
            if directory == .root && candidate == NotesStore.controlDirectoryName { return true }
            if candidate == freeName { return false }
            return (try? NameRow.exists(db, in: directory, name: candidate)) == true
        }
        try db.run(
            "INSERT INTO names(parent_key, name, entry_kind, entry_id, source) VALUES (?, ?, ?, ?, ?)",
            directory.key, name, entry.kindCode, entry.idText, source)
        let cookie = db.lastInsertRowID
        commit.addedNames.append(
            DirectoryName(
                directory: directory, name: name, entry: entry,
                isDirectory: try knownDirectory ?? isDirectory(db, entry)))
        return (name, cookie)
    }

    /// Takes `entry`'s name away (deleted, or about to be placed elsewhere).
    func removeName(_ db: Connection, entry: EntryRef, commit: inout StoreCommit) throws {
        guard let existing = try NameRow.find(db, entry: entry) else { return }
        try removeName(db, existing, commit: &commit)
    }

    /// Takes away a name row the caller read in this transaction.
    func removeName(
        _ db: Connection, _ existing: NameRow, isDirectory knownDirectory: Bool? = nil, commit: inout StoreCommit
    ) throws {
        try db.run("DELETE FROM names WHERE seq = ?", existing.seq)
        commit.removedNames.append(
            DirectoryName(
                directory: existing.directory, name: existing.name, entry: existing.entry,
                isDirectory: try knownDirectory ?? isDirectory(db, existing.entry)))
    }

    /// Whether `entry` counts in its parent's link count. A local-only entry
    /// whose row is already gone counts as a directory, the safe answer.
    func isDirectory(_ db: Connection, _ entry: EntryRef) throws -> Bool {
        switch entry {
        case .root, .folder: return true
        case .note: return false
        case .local(let seq):
            let type = try db.queryOne("SELECT type FROM local_entries WHERE seq = ?", seq) { $0.int64(0) }
            return type.map { $0 == Int64(EntryKind.directory.rawValue) } ?? true
        }
    }

    /// Re-places every live note and folder whose folder is `folderID`, after
    /// that folder appeared or disappeared here.
    func replaceChildren(of folderID: FolderID, _ db: Connection, commit: inout StoreCommit) throws {
        let directory = try displayDirectory(db, folderID: folderID)
        let notes = try db.query(
            "SELECT id, title FROM notes WHERE folder_id = ? AND deleted = 0", folderID.description
        ) { row in (NoteID(row.string(0)), row.string(1)) }
        for case (let id?, let title) in notes {
            try placeName(db, entry: .note(id), in: directory, source: title, commit: &commit)
        }
        let folders = try db.query(
            "SELECT id, name FROM folders WHERE parent_id = ? AND deleted = 0", folderID.description
        ) { row in (FolderID(row.string(0)), row.string(1)) }
        for case (let id?, let name) in folders {
            try placeName(db, entry: .folder(id), in: directory, source: name, commit: &commit)
        }
    }

    /// The name of the hidden control directory in the mount root.
    public static let controlDirectoryName = ".notesfs"
}
