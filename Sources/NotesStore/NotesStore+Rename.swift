import Foundation
import NotesModel
import SQLiteKit

/// What a rename did, for the mount's inode bookkeeping.
public struct RenameOutcome: Sendable, Equatable {
    /// The entry now at the target path.
    public var ref: EntryRef
    /// The entry that was at the target path and was replaced, if any.
    public var replaced: EntryRef?
    /// The inode number the replaced entry had; handles open on it keep their old bytes.
    public var replacedInode: UInt64?
    /// The source's inode number, now bound to `ref` (the kernel keeps the
    /// source's inode at the new name); nil when no number was moved.
    public var inode: UInt64?
    /// The rename replaced a note's text through a stale view and the stored
    /// text is a merge (or the note's own, the source's in its conflict
    /// copy): not the bytes the kernel holds for the source.
    public var contentMerged: Bool

    init(
        ref: EntryRef, replaced: EntryRef? = nil, replacedInode: UInt64? = nil, inode: UInt64? = nil,
        contentMerged: Bool = false
    ) {
        self.ref = ref
        self.replaced = replaced
        self.replacedInode = replacedInode
        self.inode = inode
        self.contentMerged = contentMerged
    }
}

// rename(2) with DESIGN.md's rules: a note keeps its identity through every
// way editors save, and renames across the synced / local-only line.
extension NotesStore {
    /// Renames or moves `name` in `from` to `newName` in `to`.
    /// With `noReplace`, an existing target is an error (`RENAME_NOREPLACE`).
    /// `targetView` is the kernel view the target note was last read through
    /// (as for a rewrite): a rename over it through a stale view is merged
    /// with what changed since, as such a write is (nil: not the kernel's).
    func rename(
        from: DirectoryRef, name: String, to: DirectoryRef, newName: String, noReplace: Bool = false,
        targetView: UInt64? = nil
    ) throws(StoreError) -> RenameOutcome {
        try write(origin: .local) { db, commit in
            guard let source = try NameRow.find(db, in: from, name: name) else { throw StoreError.notFound(name) }
            try requireDirectory(db, to)
            try validateNewName(to, newName)
            let target = try NameRow.find(db, in: to, name: newName)
            if let target, target.entry == source.entry { return RenameOutcome(ref: source.entry) }
            if target != nil && noReplace { throw StoreError.alreadyExists(newName) }
            let targetLocal = isLocalOnly(to, newName)
            switch source.entry {
            case .note(let id):
                guard let row = try NoteRow.load(db, id: id) else { throw StoreError.notFound(name) }
                return try renameNote(db, row, from: from, name: name, to: to, newName: newName,
                                      target: target, targetLocal: targetLocal, targetView: targetView,
                                      commit: &commit)
            case .folder(let id):
                guard let row = try FolderRow.load(db, id: id) else { throw StoreError.notFound(name) }
                guard !targetLocal else { throw StoreError.crossesLocalOnlyLine(name) }
                return try renameFolder(db, row, to: to, newName: newName, target: target, commit: &commit)
            case .local(let seq):
                guard let row = try LocalRow.load(db, seq: seq) else { throw StoreError.notFound(name) }
                return try renameLocal(db, row, named: source, to: to, newName: newName, target: target,
                                       targetLocal: targetLocal, targetView: targetView, commit: &commit)
            case .root:
                throw StoreError.notPermitted("the root cannot be renamed")
            }
        }
    }

    /// Clears the target path for a file replacing it: a note target is handled
    /// by the caller (it keeps its id); a local file goes; a directory refuses.
    private func clearFileTarget(_ db: Connection, _ target: NameRow, commit: inout StoreCommit) throws
        -> UInt64?
    {
        switch target.entry {
        case .local(let seq):
            guard let row = try LocalRow.load(db, seq: seq) else { return nil }
            guard row.kind != .directory else { throw StoreError.isADirectory(target.name) }
            let inode = try inodeNumber(db, for: target.entry)
            try deleteLocal(db, seq: seq, commit: &commit)
            return inode
        case .note(let id):
            guard let row = try NoteRow.load(db, id: id) else { return nil }
            let inode = try inodeNumber(db, for: target.entry)
            try deleteNote(db, row, intoTrash: true, commit: &commit)
            return inode
        case .folder, .root:
            throw StoreError.isADirectory(target.name)
        }
    }

    private func renameNote(
        _ db: Connection, _ row: NoteRow, from: DirectoryRef, name: String, to: DirectoryRef, newName: String,
        target: NameRow?, targetLocal: Bool, targetView: UInt64?, commit: inout StoreCommit
    ) throws -> RenameOutcome {
        if targetLocal {
            // Crossing into local-only names: the note is tombstoned (revivable
            // at its old path this session) and its bytes become a local file.
            var replacedInode: UInt64?
            if let target { replacedInode = try clearFileTarget(db, target, commit: &commit) }
            try deleteNote(db, row, intoTrash: true, commit: &commit)
            try rememberRevivable(db, directory: from, name: name, id: row.id)
            let seq = try insertLocal(
                db, kind: .file, in: to, name: newName, data: row.body, mode: row.mode,
                modified: row.updatedNanoseconds, commit: &commit).seq
            let moved = try repointInode(db, from: .note(row.id), to: .local(seq))
            return RenameOutcome(
                ref: .local(seq), replaced: target?.entry, replacedInode: replacedInode, inode: moved.current)
        }
        if let target, case .note(let targetID) = target.entry,
            let targetRow = try NoteRow.load(db, id: targetID), !targetRow.deleted
        {
            // Rename-over: the target keeps its id and takes the source's bytes
            // and mtime as one edit; the source goes away (its text lives on
            // in the target, so not into the trash).
            try deleteNote(db, row, intoTrash: false, commit: &commit)
            let merged = try replaceText(
                db, of: targetRow, with: row.body, modified: row.updatedNanoseconds, view: targetView, commit: &commit)
            let moved = try repointInode(db, from: .note(row.id), to: .note(targetID))
            return RenameOutcome(
                ref: .note(targetID), replaced: .note(targetID), replacedInode: moved.replaced, inode: moved.current,
                contentMerged: merged)
        }
        var replacedInode: UInt64?
        if let target { replacedInode = try clearFileTarget(db, target, commit: &commit) }
        var content = row.content
        content.title = NameCodec.title(forName: newName)
        content.folderID = folderID(of: to)
        let directory = try displayDirectory(db, folderID: content.folderID)
        if content == row.content {
            // Only the shown name differs (a suffixed twin renamed to its own title).
            try placeName(db, entry: .note(row.id), in: directory, source: content.title, commit: &commit)
        } else {
            try editNote(db, row, to: content, modified: row.updatedNanoseconds, commit: &commit)
        }
        try forceName(db, entry: .note(row.id), in: to, name: newName, commit: &commit)
        return RenameOutcome(ref: .note(row.id), replaced: target?.entry, replacedInode: replacedInode)
    }

    /// Makes sure the entry is shown under exactly `name` in `directory` (a
    /// name typed in the mount is never suffixed; the caller cleared it).
    func forceName(
        _ db: Connection, entry: EntryRef, in directory: DirectoryRef, name: String, commit: inout StoreCommit
    ) throws {
        guard let current = try NameRow.find(db, entry: entry),
            current.directory != directory || current.name != name
        else { return }
        try removeName(db, entry: entry, commit: &commit)
        try db.run(
            "INSERT INTO names(parent_key, name, entry_kind, entry_id, source) VALUES (?, ?, ?, ?, ?)",
            directory.key, name, entry.kindCode, entry.idText, current.source)
        commit.addedNames.append(
            DirectoryName(directory: directory, name: name, entry: entry, isDirectory: try isDirectory(db, entry)))
    }

    private func renameFolder(
        _ db: Connection, _ row: FolderRow, to: DirectoryRef, newName: String, target: NameRow?,
        commit: inout StoreCommit
    ) throws -> RenameOutcome {
        guard case .folder(let source) = EntryRef.folder(row.id) else { throw StoreError.notFound(newName) }
        let newParent = folderID(of: to)
        let cycle = FolderTree.wouldCreateCycle(moving: source, to: newParent) { id in
            guard let parent = try? FolderRow.load(db, id: id) else { return nil }
            return .some(parent.parentID)
        }
        if cycle { throw StoreError.wouldCreateCycle(row.name) }
        var replacedInode: UInt64?
        if let target {
            // POSIX lets a directory replace an empty directory.
            guard let inner = target.entry.directory else { throw StoreError.notADirectory(newName) }
            let hasChildren = try db.queryOne("SELECT 1 FROM names WHERE parent_key = ? LIMIT 1", inner.key) { _ in
                true
            } ?? false
            guard !hasChildren else { throw StoreError.notEmpty(newName) }
            replacedInode = try inodeNumber(db, for: target.entry)
            switch target.entry {
            case .folder(let id):
                if let targetRow = try FolderRow.load(db, id: id) { try deleteFolder(db, targetRow, commit: &commit) }
            case .local(let seq):
                try deleteLocal(db, seq: seq, commit: &commit)
            case .note, .root:
                throw StoreError.notADirectory(newName)
            }
        }
        try db.run(
            "UPDATE folders SET name = ?, parent_id = ?, updated_ns = ?, local_rev = local_rev + 1 WHERE seq = ?",
            newName, newParent?.description, now, row.seq)
        try enqueue(db, .folder(row.id), .put, commit: &commit)
        commit.changedEntries.insert(.folder(row.id))
        try placeName(db, entry: .folder(row.id), in: to, source: newName, commit: &commit)
        try forceName(db, entry: .folder(row.id), in: to, name: newName, commit: &commit)
        return RenameOutcome(ref: .folder(row.id), replaced: target?.entry, replacedInode: replacedInode)
    }

    private func renameLocal(
        _ db: Connection, _ row: LocalRow, named sourceName: NameRow, to: DirectoryRef, newName: String,
        target: NameRow?, targetLocal: Bool, targetView: UInt64?, commit: inout StoreCommit
    ) throws -> RenameOutcome {
        let source = EntryRef.local(row.seq)
        if targetLocal {
            var replacedInode: UInt64?
            if let target {
                if row.kind == .directory {
                    guard let inner = target.entry.directory else { throw StoreError.notADirectory(newName) }
                    let hasChildren = try db.queryOne(
                        "SELECT 1 FROM names WHERE parent_key = ? LIMIT 1", inner.key) { _ in true } ?? false
                    guard !hasChildren else { throw StoreError.notEmpty(newName) }
                    replacedInode = try inodeNumber(db, for: target.entry)
                    if case .local(let seq) = target.entry { try deleteLocal(db, seq: seq, commit: &commit) }
                } else {
                    replacedInode = try clearFileTarget(db, target, commit: &commit)
                }
            }
            try removeName(db, entry: source, commit: &commit)
            try placeName(db, entry: source, in: to, source: newName, commit: &commit)
            try db.run("UPDATE local_entries SET updated_ns = updated_ns WHERE seq = ?", row.seq)
            commit.changedEntries.insert(source)
            return RenameOutcome(ref: source, replaced: target?.entry, replacedInode: replacedInode)
        }
        // Into synced names: a directory would drag local-only content across.
        guard row.kind == .file else {
            if row.kind == .directory { throw StoreError.crossesLocalOnlyLine(newName) }
            throw StoreError.notPermitted("symbolic links are allowed for local-only names only")
        }
        guard row.size <= Int64(configuration.noteSizeLimitBytes) else {
            throw StoreError.tooLarge(limit: configuration.noteSizeLimitBytes)
        }
        // The file's bytes become a note's body; its backing file goes after the commit.
        let body = try localFileContents(db, row)
        if let target, case .note(let targetID) = target.entry,
            let targetRow = try NoteRow.load(db, id: targetID), !targetRow.deleted
        {
            let merged = try replaceText(
                db, of: targetRow, with: body, modified: row.updatedNanoseconds, view: targetView, commit: &commit)
            try deleteLocalFile(db, row, named: sourceName, commit: &commit)
            let moved = try repointInode(db, from: source, to: .note(targetID))
            return RenameOutcome(
                ref: .note(targetID), replaced: .note(targetID), replacedInode: moved.replaced, inode: moved.current,
                contentMerged: merged)
        }
        var replacedInode: UInt64?
        if let target { replacedInode = try clearFileTarget(db, target, commit: &commit) }
        let content = NoteContent(title: NameCodec.title(forName: newName), body: body, folderID: folderID(of: to))
        let noteID: NoteID
        if let dead = try revivableNote(db, directory: to, name: newName) {
            try reviveNote(db, dead, content: content, modified: row.updatedNanoseconds, commit: &commit)
            noteID = dead.id
        } else {
            noteID = NoteID(newUUID())
            try insertNote(db, id: noteID, content: content, modified: row.updatedNanoseconds, mode: row.mode,
                           commit: &commit)
        }
        try forceName(db, entry: .note(noteID), in: to, name: newName, commit: &commit)
        try deleteLocalFile(db, row, named: sourceName, commit: &commit)
        let moved = try repointInode(db, from: source, to: .note(noteID))
        return RenameOutcome(
            ref: .note(noteID), replaced: target?.entry, replacedInode: replacedInode, inode: moved.current)
    }
}
