import Foundation
import NotesModel
import SQLiteKit

// File-system operations, each one transaction. The mount maps every request
// to one of these; import and the simulation use them too.
extension NotesStore {
    func requireDirectory(_ db: Connection, _ directory: DirectoryRef) throws {
        guard try directoryExists(db, directory) else { throw StoreError.notFound("directory \(directory)") }
    }

    func validateNewName(_ directory: DirectoryRef, _ name: String) throws {
        guard NameCodec.isValidFileName(name) else { throw StoreError.invalidName("'\(name.prefix(64))'") }
        if directory == .root && name == Self.controlDirectoryName {
            throw StoreError.alreadyExists(name)
        }
    }

    /// True when a file with this name in this directory stays on this machine.
    func isLocalOnly(_ directory: DirectoryRef, _ name: String) -> Bool {
        directory.isLocalOnly || LocalOnlyNames.isLocalOnly(name)
    }

    /// Creates an empty file. Local-only names become local entries; a path
    /// whose note was deleted during this session revives that note.
    func createFile(
        in directory: DirectoryRef, name: String, mode: UInt32 = 0o644, exclusive: Bool = true
    ) throws(StoreError) -> Entry {
        try write(origin: .local) { db, commit in
            try createFile(db, in: directory, name: name, mode: mode, exclusive: exclusive, commit: &commit).entry
        }
    }

    /// `createFile` inside the caller's transaction. `isNew` is true when the
    /// entry was made here (not found, not revived): nothing else refers to it yet.
    func createFile(
        _ db: Connection, in directory: DirectoryRef, name: String, mode: UInt32, exclusive: Bool,
        commit: inout StoreCommit
    ) throws -> (entry: Entry, isNew: Bool) {
        let place = try creationPlace(db, in: directory, name: name)
        guard place.directoryExists else { throw StoreError.notFound("directory \(directory)") }
        try validateNewName(directory, name)
        if place.nameTaken {
            guard !exclusive else { throw StoreError.alreadyExists(name) }
            guard let existing = try lookup(db, in: directory, name: name) else { throw StoreError.notFound(name) }
            guard existing.kind != .directory else { throw StoreError.isADirectory(name) }
            return (existing, false)
        }
        // A new entry is shown where it was asked for (creationPlace found
        // that directory live and the name free), so it is known without
        // reading it back.
        if isLocalOnly(directory, name) {
            let made = try insertLocal(
                db, kind: .file, in: directory, name: name, mode: mode, nameIsFree: true, commit: &commit)
            return (made.entry, true)
        }
        let content = NoteContent(title: NameCodec.title(forName: name), body: Data(),
                                  folderID: folderID(of: directory))
        if let id = place.revivable, let dead = try NoteRow.load(db, id: id), dead.deleted {
            try reviveNote(db, dead, content: content, commit: &commit)
            guard let entry = try entry(db, for: .note(dead.id)) else { throw StoreError.notFound(name) }
            return (entry, false)
        }
        let entry = try insertNote(
            db, id: NoteID(newUUID()), content: content, mode: mode, shownIn: directory, freeName: name,
            commit: &commit)
        return (entry, true)
    }

    /// What a create needs to know of its place before it writes: whether the
    /// directory is there, whether the name is taken in it, and the note
    /// deleted this session that a file made at that path revives.
    struct CreationPlace {
        var directoryExists: Bool
        var nameTaken: Bool
        var revivable: NoteID?
    }

    /// The three questions of `CreationPlace` in one statement: a `cp -r`
    /// asked them in three, a measurable part of every created file.
    func creationPlace(_ db: Connection, in directory: DirectoryRef, name: String) throws -> CreationPlace {
        let arguments: [any SQLBindable]
        let sql: String
        switch directory {
        case .root:
            (sql, arguments) = (Self.creationPlaceInRootSelect, [directory.key, name])
        case .folder(let id):
            (sql, arguments) = (Self.creationPlaceInFolderSelect, [directory.key, name, id.description])
        case .local(let seq):
            (sql, arguments) = (Self.creationPlaceInLocalSelect, [directory.key, name, seq])
        }
        return try db.queryOne(sql, arguments: arguments) { row in
            CreationPlace(
                directoryExists: row.bool(0), nameTaken: row.bool(1),
                revivable: row.optionalString(2).flatMap(NoteID.init))
        } ?? CreationPlace(directoryExists: false, nameTaken: false, revivable: nil)
    }

    /// `?1` the directory's names key, `?2` the name, `?3` the directory's own
    /// id; the first column says whether the directory is there.
    private static func creationPlaceSelect(directoryExists: String) -> String {
        """
        SELECT \(directoryExists),
            EXISTS (SELECT 1 FROM names WHERE parent_key = ?1 AND name = ?2),
            (SELECT note_id FROM revivable WHERE parent_key = ?1 AND name = ?2)
        """
    }
    private static let creationPlaceInRootSelect = creationPlaceSelect(directoryExists: "1")
    private static let creationPlaceInFolderSelect = creationPlaceSelect(
        directoryExists: "EXISTS (SELECT 1 FROM folders WHERE id = ?3 AND deleted = 0)")
    private static let creationPlaceInLocalSelect = creationPlaceSelect(
        directoryExists: "(SELECT type FROM local_entries WHERE seq = ?3) IS \(EntryKind.directory.rawValue)")

    /// Creates a note with content in one step (import, tests, the simulation).
    @discardableResult
    func createNote(
        in directory: DirectoryRef, title: String, body: Data, modifiedNanoseconds: Int64? = nil
    ) throws(StoreError) -> NoteID {
        try write(origin: .local) { db, commit in
            try requireDirectory(db, directory)
            guard !directory.isLocalOnly else { throw StoreError.notPermitted("notes cannot live in local-only directories") }
            guard body.count <= configuration.noteSizeLimitBytes else {
                throw StoreError.tooLarge(limit: configuration.noteSizeLimitBytes)
            }
            let id = NoteID(newUUID())
            try insertNote(
                db, id: id, content: NoteContent(title: title, body: body, folderID: folderID(of: directory)),
                modified: modifiedNanoseconds, commit: &commit)
            return id
        }
    }

    /// Replaces a note's whole body as one edit (import, restore, the simulation).
    func replaceBody(of id: NoteID, with body: Data) throws(StoreError) {
        try write(origin: .local) { db, commit in
            guard let row = try NoteRow.load(db, id: id), !row.deleted else { throw StoreError.notFound("note \(id)") }
            var content = row.content
            content.body = body
            try editNote(db, row, to: content, commit: &commit)
        }
    }

    /// Sets permission bits (kept locally; never synced).
    func setMode(_ ref: EntryRef, mode: UInt32) throws(StoreError) {
        let bits = Int64(mode & 0o7777)
        try write(origin: .local, checkSpace: false) { db, commit in
            try recordStatusChange(db, ref, at: now)
            switch ref {
            case .note(let id): try db.run("UPDATE notes SET mode = ? WHERE id = ?", bits, id.description)
            case .folder(let id): try db.run("UPDATE folders SET mode = ? WHERE id = ?", bits, id.description)
            case .local(let seq): try db.run("UPDATE local_entries SET mode = ? WHERE seq = ?", bits, seq)
            case .root: return
            }
            commit.changedEntries.insert(ref)
        }
    }

    /// Creates a directory: a synced folder, or a local-only one for local-only names.
    func makeDirectory(in directory: DirectoryRef, name: String, mode: UInt32 = 0o755) throws(StoreError) -> Entry {
        try write(origin: .local) { db, commit in
            try requireDirectory(db, directory)
            try validateNewName(directory, name)
            if try lookup(db, in: directory, name: name) != nil { throw StoreError.alreadyExists(name) }
            let ref: EntryRef
            if isLocalOnly(directory, name) {
                ref = .local(
                    try insertLocal(db, kind: .directory, in: directory, name: name, mode: mode, commit: &commit).seq)
            } else {
                ref = .folder(try makeFolder(db, in: directory, name: name, mode: mode, commit: &commit))
            }
            guard let entry = try entry(db, for: ref) else { throw StoreError.notFound(name) }
            return entry
        }
    }

    /// Creates (or revives) a synced folder. Its id is derived from the parent
    /// and name, so the same folder made offline on two machines is one folder.
    func makeFolder(
        _ db: Connection, in directory: DirectoryRef, name: String, mode: UInt32, commit: inout StoreCommit
    ) throws -> FolderID {
        let parent = folderID(of: directory)
        var id = FolderTree.derivedFolderID(parent: parent, name: name)
        if let existing = try FolderRow.load(db, id: id) {
            if existing.deleted {
                try db.run(
                    """
                    UPDATE folders SET deleted = 0, name = ?, parent_id = ?, updated_ns = ?, mode = ?,
                        local_rev = local_rev + 1 WHERE seq = ?
                    """, name, parent?.description, now, Int64(mode), existing.seq)
                try enqueue(db, .folder(id), .put, commit: &commit)
                commit.changedEntries.insert(.folder(id))
                try placeName(db, entry: .folder(id), in: directory, source: name, commit: &commit)
                try replaceChildren(of: id, db, commit: &commit)
                return id
            }
            id = FolderID(newUUID())
        }
        let time = now
        try db.run(
            "INSERT INTO folders(id, parent_id, name, created_ns, updated_ns, mode) VALUES (?, ?, ?, ?, ?, ?)",
            id.description, parent?.description, name, time, time, Int64(mode))
        try enqueue(db, .folder(id), .put, commit: &commit)
        commit.changedEntries.insert(.folder(id))
        try placeName(db, entry: .folder(id), in: directory, source: name, commit: &commit)
        return id
    }

    /// Creates a folder path like `a/b/c` under the root, reusing existing folders (import).
    func makeFolders(path components: [String]) throws(StoreError) -> DirectoryRef {
        var directory = DirectoryRef.root
        for component in components {
            if let existing = try lookup(in: directory, name: component) {
                guard existing.kind == .directory, let next = existing.ref.directory else {
                    throw .notADirectory(component)
                }
                directory = next
            } else {
                guard let next = try makeDirectory(in: directory, name: component).ref.directory else {
                    throw .notADirectory(component)
                }
                directory = next
            }
        }
        return directory
    }

    /// Creates a symbolic link; allowed only for local-only names (emacs lock files).
    func makeSymlink(in directory: DirectoryRef, name: String, target: String) throws(StoreError) -> Entry {
        try write(origin: .local) { db, commit in
            try requireDirectory(db, directory)
            try validateNewName(directory, name)
            guard isLocalOnly(directory, name) else {
                throw StoreError.notPermitted("symbolic links are allowed for local-only names only")
            }
            if try lookup(db, in: directory, name: name) != nil { throw StoreError.alreadyExists(name) }
            return try insertLocal(
                db, kind: .symlink, in: directory, name: name, data: Data(target.utf8), mode: 0o777, commit: &commit
            ).entry
        }
    }

    /// Removes a file: a note becomes a tombstone (or vanishes if never sent).
    func removeFile(in directory: DirectoryRef, name: String) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, commit in
            guard let found = try NameRow.find(db, in: directory, name: name) else { throw StoreError.notFound(name) }
            switch found.entry {
            case .note(let id):
                guard let row = try NoteRow.load(db, id: id) else { throw StoreError.notFound(name) }
                try deleteNote(db, row, intoTrash: true, commit: &commit)
                try rememberRevivable(db, directory: directory, name: name, id: id)
            case .local(let seq):
                guard let row = try LocalRow.load(db, seq: seq) else { throw StoreError.notFound(name) }
                guard row.kind != .directory else { throw StoreError.isADirectory(name) }
                try deleteLocal(db, seq: seq, commit: &commit)
            case .folder, .root:
                throw StoreError.isADirectory(name)
            }
        }
    }

    /// Removes an empty directory; a folder becomes a tombstone.
    func removeDirectory(in directory: DirectoryRef, name: String) throws(StoreError) {
        try write(origin: .local, checkSpace: false) { db, commit in
            guard let found = try NameRow.find(db, in: directory, name: name) else { throw StoreError.notFound(name) }
            guard let inner = found.entry.directory, found.entry != .root else { throw StoreError.notADirectory(name) }
            if case .local(let seq) = found.entry {
                guard try LocalRow.load(db, seq: seq)?.kind == .directory else { throw StoreError.notADirectory(name) }
            }
            let hasChildren = try db.queryOne("SELECT 1 FROM names WHERE parent_key = ? LIMIT 1", inner.key) { _ in
                true
            } ?? false
            guard !hasChildren else { throw StoreError.notEmpty(name) }
            switch found.entry {
            case .folder(let id):
                guard let row = try FolderRow.load(db, id: id) else { throw StoreError.notFound(name) }
                try deleteFolder(db, row, commit: &commit)
            case .local(let seq):
                try deleteLocal(db, seq: seq, commit: &commit)
            case .note, .root:
                throw StoreError.notADirectory(name)
            }
        }
    }

    func deleteFolder(_ db: Connection, _ row: FolderRow, commit: inout StoreCommit) throws {
        try tombstoneOrDrop(db, .folder(row.id), seq: row.seq, serverVersion: row.serverVersion, commit: &commit)
        // Notes that still name this folder (deleted elsewhere, or hidden) show in the root.
        try replaceChildren(of: row.id, db, commit: &commit)
    }
}
