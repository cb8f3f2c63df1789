import Foundation
import NotesModel

/// The trash, as the mount (`tree.trash`) and the command (`admin.trash`)
/// both see it: the notes deleted here or on another machine, their last
/// text, and bringing them back. One face for both users, so a trash call is
/// written once. It holds nothing but the trash: no file operations, no sync
/// bookkeeping. Forgetting the trash's notes is the command's alone
/// (`StoreAdmin.emptyTrash`). Each call is one transaction on the store's
/// serial queue, made from the calling thread.
public struct NotesTrash: Sendable {
    /// The shared database core. Internal: outside this module a face is the
    /// only way in.
    let store: NotesStore

    init(_ store: NotesStore) { self.store = store }
}

extension NotesTrash {
    /// Every note in the trash, most recently deleted first.
    public func entries() throws(StoreError) -> [TrashEntry] {
        try store.trashEntries()
    }

    /// The notes in the trash under the folder path `directory` ("" for all).
    public func entries(under directory: String) throws(StoreError) -> [TrashEntry] {
        try store.trashEntries(under: directory)
    }

    /// The trash entry `seq`, if the trash still shows it.
    public func entry(_ seq: Int64) throws(StoreError) -> TrashEntry? {
        try store.trashEntry(seq)
    }

    /// What `name` stands for in the trash folder `directory` ("" is the
    /// trash itself), as `TrashTree` shows it; reads only the entries at
    /// that path and whether a folder of that name exists.
    public func node(named name: String, in directory: String) throws(StoreError) -> TrashNode? {
        try store.trashNode(named: name, in: directory)
    }

    /// The last text of a note in the trash.
    public func body(_ seq: Int64) throws(StoreError) -> Data {
        try store.trashBody(seq)
    }

    /// Brings a note in the trash back as the same note with its last text,
    /// as an edit that syncs: a note the server knows is put on its
    /// tombstone's version, which revives it on every machine; one it never
    /// knew is sent as new. Returns the note's id.
    @discardableResult
    public func restore(_ seq: Int64, to destination: TrashDestination = .original) throws(StoreError) -> NoteID {
        try store.restoreFromTrash(seq, to: destination)
    }

    /// Brings back every note in the trash folder `path`: each to its own
    /// folder (`.original`), or into the folder `destination` names (made
    /// there, or an empty one there), along their paths below `path`.
    @discardableResult
    public func restoreDirectory(
        _ path: String, to destination: TrashDestination = .original
    ) throws(StoreError) -> [NoteID] {
        try store.restoreTrashDirectory(path, to: destination)
    }
}
