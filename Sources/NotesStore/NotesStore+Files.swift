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
    public func createFile(
        in directory: DirectoryRef, name: String, mode: UInt32 = 0o644, exclusive: Bool = true
    ) throws(StoreError) -> Entry {
        try write(origin: .local) { db, commit in
            try createFile(db, in: directory, name: name, mode: mode, exclusive: exclusive, commit: &commit)
        }
    }

    /// `createFile` inside the caller's transaction.
    func createFile(
        _ db: Connection, in directory: DirectoryRef, name: String, mode: UInt32, exclusive: Bool,
        commit: inout StoreCommit
    ) throws -> Entry {
        try requireDirectory(db, directory)
        try validateNewName(directory, name)
        if let existing = try lookup(db, in: directory, name: name) {
            guard !exclusive else { throw StoreError.alreadyExists(name) }
            guard existing.kind != .directory else { throw StoreError.isADirectory(name) }
            return existing
        }
        let ref: EntryRef
        if isLocalOnly(directory, name) {
            ref = .local(try insertLocal(db, kind: .file, in: directory, name: name, mode: mode, commit: &commit))
        } else {
            let content = NoteContent(title: NameCodec.title(forName: name), body: Data(),
                                      folderID: folderID(of: directory))
            if let dead = try revivableNote(db, directory: directory, name: name) {
                try reviveNote(db, dead, content: content, commit: &commit)
                ref = .note(dead.id)
            } else {
                let id = NoteID(newUUID())
                try insertNote(db, id: id, content: content, mode: mode, commit: &commit)
                ref = .note(id)
            }
        }
        guard let entry = try entry(db, for: ref) else { throw StoreError.notFound(name) }
        return entry
    }

    /// Creates a note with content in one step (import, tests, the simulation).
    @discardableResult
    public func createNote(
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

    /// Writes `bytes` at `offset` (past the end zero-fills the gap). Returns the new size.
    @discardableResult
    public func write(_ ref: EntryRef, offset: Int64, bytes: Data) throws(StoreError) -> Int64 {
        try write(ref, offset: offset, bytes: bytes, append: false, view: nil).size
    }

    /// A write as the kernel sends it. `append` (the descriptor has
    /// `O_APPEND`) puts the bytes at the note's current end, whatever offset
    /// the kernel computed from the size it cached. `view` is the
    /// `kernelViewGeneration` read before the kernel last learned the note's
    /// size: a write through an older view is merged with the text it did not
    /// see (see `KernelViewLedger`), never written over it.
    public func write(_ ref: EntryRef, offset: Int64, bytes: Data, append: Bool, view: UInt64?)
        throws(StoreError) -> KernelWriteResult
    {
        do {
            return try storeKernelWrite(ref, offset: offset, bytes: bytes, append: append, view: view)
        } catch {
            try holdIfOversized(ref, after: error)
            throw error
        }
    }

    private func storeKernelWrite(_ ref: EntryRef, offset: Int64, bytes: Data, append: Bool, view: UInt64?)
        throws(StoreError) -> KernelWriteResult
    {
        guard offset >= 0 else { throw .invalidName("negative offset") }
        let end = offset + Int64(bytes.count)
        if case .note = ref, !append, end > Int64(configuration.noteSizeLimitBytes) {
            throw .tooLarge(limit: configuration.noteSizeLimitBytes)
        }
        return try write(origin: .local) { db, commit in
            switch ref {
            case .note(let id):
                if let result = try writeInChunks(
                    db, id: id, offset: offset, bytes: bytes, append: append, view: view, commit: &commit)
                {
                    return result
                }
                guard let row = try NoteRow.load(db, id: id), !row.deleted else {
                    throw StoreError.notFound(ref.description)
                }
                if append {
                    var content = row.content
                    content.body.append(bytes)
                    try editNote(db, row, to: content, commit: &commit)
                    return KernelWriteResult(
                        size: Int64(content.body.count), kernelViewStale: offset != Int64(row.body.count))
                }
                if let size = try writeThroughStaleView(
                    db, row, view: view, change: { Self.splice($0, bytes, at: Int(offset)) }, commit: &commit)
                {
                    return KernelWriteResult(size: size, kernelViewStale: true)
                }
                var content = row.content
                content.body = Self.splice(row.body, bytes, at: Int(offset))
                try editNote(db, row, to: content, commit: &commit)
                return KernelWriteResult(size: Int64(content.body.count), kernelViewStale: false)
            case .local(let seq):
                guard let row = try LocalRow.load(db, seq: seq), row.kind == .file else {
                    throw StoreError.notFound(ref.description)
                }
                let size = try writeLocalFile(db, row, bytes: bytes, at: append ? row.size : offset)
                commit.changedEntries.insert(ref)
                return KernelWriteResult(size: size, kernelViewStale: append && offset != row.size)
            case .root, .folder:
                throw StoreError.isADirectory(ref.description)
            }
        }
    }

    /// What a chunked write needs to know of a note, without its body.
    private struct NoteExtent {
        var seq: Int64
        var title: String
        var chunkBytes: Int64
        var size: Int64
        var synced: Bool

        static func load(_ db: Connection, id: NoteID) throws -> NoteExtent? {
            try db.queryOne(
                "SELECT seq, title, chunk_bytes, body_size, server_version IS NOT NULL FROM notes WHERE id = ? AND deleted = 0",
                id.description
            ) { NoteExtent(seq: $0.int64(0), title: $0.string(1), chunkBytes: $0.int64(2), size: $0.int64(3), synced: $0.bool(4)) }
        }
    }

    /// A kernel write into a large note, stored in the chunks it touches (a
    /// note crossing `chunkedBodyThresholdBytes` is split into chunks first).
    /// Nil when the write takes the whole-body path: a small note, a deleted
    /// one, or a write through a stale view, which is merged.
    private func writeInChunks(
        _ db: Connection, id: NoteID, offset: Int64, bytes: Data, append: Bool, view: UInt64?,
        commit: inout StoreCommit
    ) throws -> KernelWriteResult? {
        guard let extent = try NoteExtent.load(db, id: id) else { return nil }
        let at = append ? extent.size : offset
        let end = at + Int64(bytes.count)
        guard extent.chunkBytes > 0 || end > Int64(configuration.chunkedBodyThresholdBytes) else { return nil }
        guard kernelWriteAppliesAsItIs(id, view: view) else { return nil }
        guard end <= Int64(configuration.noteSizeLimitBytes) else {
            throw StoreError.tooLarge(limit: configuration.noteSizeLimitBytes)
        }
        try NoteChunks.markForSearch(db, seq: extent.seq)
        var chunkBytes = extent.chunkBytes
        if chunkBytes == 0 {
            chunkBytes = Int64(max(1, configuration.bodyChunkBytes))
            let body = try db.queryOne("SELECT body FROM notes WHERE seq = ?", extent.seq) { $0.data(0) } ?? Data()
            try db.run(
                "UPDATE notes SET body = x'', chunk_bytes = ?, body_size = ? WHERE seq = ?", chunkBytes,
                Int64(body.count), extent.seq)
            try NoteChunks.store(db, seq: extent.seq, body: body, chunkBytes: chunkBytes)
        }
        let newSize = try NoteChunks.write(
            db, seq: extent.seq, chunkBytes: chunkBytes, size: extent.size, offset: at, bytes: bytes)
        try noteChunkedEdit(db, id: id, extent: extent, newSize: newSize, commit: &commit)
        return KernelWriteResult(size: newSize, kernelViewStale: append && offset != extent.size)
    }

    /// A kernel truncation of a chunked note that stays chunked (above the
    /// threshold). False when it takes the whole-body path.
    private func truncateInChunks(
        _ db: Connection, id: NoteID, to size: Int64, view: UInt64?, commit: inout StoreCommit
    ) throws -> Bool {
        guard let extent = try NoteExtent.load(db, id: id), extent.chunkBytes > 0,
            size > Int64(configuration.chunkedBodyThresholdBytes), kernelWriteAppliesAsItIs(id, view: view)
        else { return false }
        guard size != extent.size else { return true }
        if size * 2 < extent.size {
            // As for any edit that halves a note: the cut text stays in the history.
            let body = try NoteChunks.assemble(db, seq: extent.seq, size: extent.size)
            try addHistory(db, noteID: id, title: extent.title, body: body, reason: .shrunk)
        }
        try NoteChunks.markForSearch(db, seq: extent.seq)
        try NoteChunks.resize(db, seq: extent.seq, chunkBytes: extent.chunkBytes, size: extent.size, to: size)
        try noteChunkedEdit(db, id: id, extent: extent, newSize: size, commit: &commit)
        return true
    }

    /// The bookkeeping of an edit made in chunks: size, time, revision, outbox.
    private func noteChunkedEdit(
        _ db: Connection, id: NoteID, extent: NoteExtent, newSize: Int64, commit: inout StoreCommit
    ) throws {
        try db.run(
            """
            UPDATE notes SET body_size = ?, updated_ns = ?, local_rev = local_rev + 1,
                \(Self.releaseOversizeHoldSQL) WHERE seq = ?
            """, newSize, now, newSize, extent.seq)
        try enqueue(db, kind: .note, id: id.description, op: "put", commit: &commit)
        commit.changedEntries.insert(.note(id))
        if extent.synced { commit.touchedSyncedNote = true }
    }

    static func splice(_ body: Data, _ bytes: Data, at offset: Int) -> Data {
        var result = body
        if offset > result.count { result.append(Data(count: offset - result.count)) }
        let end = offset + bytes.count
        if end > result.count { result.append(Data(count: end - result.count)) }
        result.replaceSubrange(result.startIndex + offset..<result.startIndex + end, with: bytes)
        return result
    }

    /// Sets a file's size, cutting or zero-extending. Cut text goes to the history.
    public func truncate(_ ref: EntryRef, to size: Int64) throws(StoreError) {
        _ = try truncate(ref, to: size, view: nil)
    }

    /// A truncation as the kernel sends it; `view` as for `write(_:offset:bytes:append:view:)`.
    /// Returns true when the stored text differs from what the kernel believes.
    public func truncate(_ ref: EntryRef, to size: Int64, view: UInt64?) throws(StoreError) -> Bool {
        do {
            return try storeKernelTruncation(ref, to: size, view: view)
        } catch {
            try holdIfOversized(ref, after: error)
            throw error
        }
    }

    private func storeKernelTruncation(_ ref: EntryRef, to size: Int64, view: UInt64?) throws(StoreError) -> Bool {
        guard size >= 0 else { throw .invalidName("negative size") }
        if case .note = ref, size > Int64(configuration.noteSizeLimitBytes) {
            throw .tooLarge(limit: configuration.noteSizeLimitBytes)
        }
        return try write(origin: .local) { db, commit in
            switch ref {
            case .note(let id):
                if try truncateInChunks(db, id: id, to: size, view: view, commit: &commit) { return false }
                guard let row = try NoteRow.load(db, id: id), !row.deleted else {
                    throw StoreError.notFound(ref.description)
                }
                if try writeThroughStaleView(
                    db, row, view: view, change: { Self.resized($0, to: Int(size)) }, commit: &commit) != nil
                {
                    return true
                }
                var content = row.content
                content.body = Self.resized(row.body, to: Int(size))
                try editNote(db, row, to: content, commit: &commit)
                return false
            case .local(let seq):
                guard let row = try LocalRow.load(db, seq: seq), row.kind == .file else {
                    throw StoreError.notFound(ref.description)
                }
                try truncateLocalFile(db, row, to: size)
                commit.changedEntries.insert(ref)
                return false
            case .root, .folder:
                throw StoreError.isADirectory(ref.description)
            }
        }
    }

    static func resized(_ data: Data, to size: Int) -> Data {
        if size <= data.count { return Data(data.prefix(size)) }
        return data + Data(count: size - data.count)
    }

    /// Replaces a note's whole body as one edit (import, restore, the simulation).
    public func replaceBody(of id: NoteID, with body: Data) throws(StoreError) {
        try write(origin: .local) { db, commit in
            guard let row = try NoteRow.load(db, id: id), !row.deleted else { throw StoreError.notFound("note \(id)") }
            var content = row.content
            content.body = body
            try editNote(db, row, to: content, commit: &commit)
        }
    }

    /// Sets permission bits (kept locally; never synced).
    public func setMode(_ ref: EntryRef, mode: UInt32) throws(StoreError) {
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
    public func makeDirectory(in directory: DirectoryRef, name: String, mode: UInt32 = 0o755) throws(StoreError) -> Entry {
        try write(origin: .local) { db, commit in
            try requireDirectory(db, directory)
            try validateNewName(directory, name)
            if try lookup(db, in: directory, name: name) != nil { throw StoreError.alreadyExists(name) }
            let ref: EntryRef
            if isLocalOnly(directory, name) {
                ref = .local(try insertLocal(db, kind: .directory, in: directory, name: name, mode: mode, commit: &commit))
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
                try enqueue(db, kind: .folder, id: id.description, op: "put", commit: &commit)
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
        try enqueue(db, kind: .folder, id: id.description, op: "put", commit: &commit)
        commit.changedEntries.insert(.folder(id))
        try placeName(db, entry: .folder(id), in: directory, source: name, commit: &commit)
        return id
    }

    /// Creates a folder path like `a/b/c` under the root, reusing existing folders (import).
    public func makeFolders(path components: [String]) throws(StoreError) -> DirectoryRef {
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
    public func makeSymlink(in directory: DirectoryRef, name: String, target: String) throws(StoreError) -> Entry {
        try write(origin: .local) { db, commit in
            try requireDirectory(db, directory)
            try validateNewName(directory, name)
            guard isLocalOnly(directory, name) else {
                throw StoreError.notPermitted("symbolic links are allowed for local-only names only")
            }
            if try lookup(db, in: directory, name: name) != nil { throw StoreError.alreadyExists(name) }
            let seq = try insertLocal(
                db, kind: .symlink, in: directory, name: name, data: Data(target.utf8), mode: 0o777, commit: &commit)
            guard let entry = try entry(db, for: .local(seq)) else { throw StoreError.notFound(name) }
            return entry
        }
    }

    /// Removes a file: a note becomes a tombstone (or vanishes if never sent).
    public func removeFile(in directory: DirectoryRef, name: String) throws(StoreError) {
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
    public func removeDirectory(in directory: DirectoryRef, name: String) throws(StoreError) {
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
