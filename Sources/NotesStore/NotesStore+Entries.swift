import Foundation
import NotesModel
import SQLiteKit

// Reading the tree: lookups, attributes, listings and byte ranges.
extension NotesStore {
    /// One query shape for every entry read: the name row joined with its entity.
    /// A note's columns come from the covering index `notes_listing` alone
    /// (schema v2), never from its row, which holds the body. Folders and
    /// local entries are rare, so they are read by subqueries that run only
    /// for their own kind, not by joins that every note would pay a seek for.
    static let entrySelect = "SELECT \(entryColumns) FROM names n \(entryJoins)"
    /// Made once: the text of a query is the statement cache's key.
    static let lookupSelect = entrySelect + " WHERE n.parent_key = ? AND n.name = ?"
    static let entryByRefSelect = entrySelect + " WHERE n.entry_kind = ? AND n.entry_id = ?"
    static let entryColumns = """
        n.seq, n.parent_key, n.name, n.entry_kind, n.entry_id,
        COALESCE(no.updated_ns, CASE n.entry_kind
            WHEN 'folder' THEN (SELECT updated_ns FROM folders WHERE id = n.entry_id)
            WHEN 'local' THEN (SELECT updated_ns FROM local_entries WHERE seq = CAST(n.entry_id AS INTEGER)) END, 0),
        COALESCE(no.body_size, CASE n.entry_kind
            WHEN 'local' THEN (SELECT size FROM local_entries WHERE seq = CAST(n.entry_id AS INTEGER)) END, 0),
        COALESCE(no.mode, CASE n.entry_kind
            WHEN 'folder' THEN (SELECT mode FROM folders WHERE id = n.entry_id)
            WHEN 'local' THEN (SELECT mode FROM local_entries WHERE seq = CAST(n.entry_id AS INTEGER)) END, 420),
        CASE n.entry_kind WHEN 'local' THEN (SELECT type FROM local_entries WHERE seq = CAST(n.entry_id AS INTEGER)) END,
        CASE n.entry_kind
            WHEN 'folder' THEN \(subdirectoryCount("'f:' || n.entry_id"))
            WHEN 'local' THEN \(subdirectoryCount("'l:' || n.entry_id")) END,
        t.changed_ns, t.changed_at_modified_ns, t.accessed_ns
        """
    /// The subdirectories listed in the directory whose names key is `key`
    /// (an SQL expression): its folders and local-only directories, found
    /// through `names_directories` without visiting its notes.
    static func subdirectoryCount(_ key: String) -> String {
        """
        (SELECT count(*) FROM names c INDEXED BY names_directories
            WHERE c.parent_key = \(key) AND c.entry_kind IN ('folder', 'local')
            AND (c.entry_kind = 'folder'
                OR (SELECT type FROM local_entries WHERE seq = CAST(c.entry_id AS INTEGER)) = \(EntryKind.directory.rawValue)))
        """
    }
    /// `entry_times` holds rows only for entries whose ctime or atime
    /// differs from their mtime (one primary-key probe per entry).
    static let entryJoins = """
        LEFT JOIN notes no INDEXED BY notes_listing ON n.entry_kind = 'note' AND no.id = n.entry_id
        LEFT JOIN entry_times t ON t.entry_kind = n.entry_kind AND t.entry_id = n.entry_id
        """
    /// A page of a listing: the page's cookies are picked and sorted first, as
    /// bare integers, and only those rows are joined with their entities. (A
    /// sort over the joined rows cost as much as the joins; `list` puts the
    /// page in cookie order itself.)
    /// Each entry comes with its inode number (column 13), so the mount
    /// need not look it up entry by entry.
    static let listSelect = """
        SELECT \(entryColumns), i.ino
        FROM (SELECT seq FROM names WHERE parent_key = ? AND seq > ? ORDER BY seq LIMIT ?) page
        CROSS JOIN names n ON n.seq = page.seq
        \(entryJoins)
        LEFT JOIN inodes i ON i.entry_kind = n.entry_kind AND i.entry_id = n.entry_id
        """

    /// An entry from a row of `entrySelect`. `parent`, when the caller knows
    /// it (a listing), is used instead of parsing the row's.
    static func entry(from row: Row, parent knownParent: DirectoryRef? = nil) -> Entry? {
        guard let parent = knownParent ?? DirectoryRef(key: row.string(1)),
            let ref = row.withBytes(3, { kind in row.withBytes(4) { id in EntryRef(kindCode: kind, idText: id) } })
        else { return nil }
        let kind: EntryKind
        switch ref {
        case .root, .folder: kind = .directory
        case .note: kind = .file
        case .local: kind = EntryKind(rawValue: row.int(8)) ?? .file
        }
        return Entry(
            ref: ref, name: row.string(2), parent: parent, kind: kind,
            size: kind == .directory ? 0 : row.int64(6), modifiedNanoseconds: row.int64(5),
            mode: UInt32(truncatingIfNeeded: row.int64(7)) & 0o7777,
            cookie: row.int64(0), subdirectories: kind == .directory ? row.int(9) : 0,
            localTimes: LocalTimes(
                changedNanoseconds: row.optionalInt64(10), changedAtModifiedNanoseconds: row.optionalInt64(11),
                accessedNanoseconds: row.optionalInt64(12)))
    }

    /// The root has no row of its own: its mtime is kept in `entry_times`
    /// (until its first change, the time this store was opened).
    func rootEntry(_ db: Connection) throws -> Entry {
        try db.queryOne(
            """
            SELECT \(Self.subdirectoryCount("'r'")), t.changed_ns, t.changed_at_modified_ns, t.accessed_ns,
                t.modified_ns
            FROM (SELECT 1) LEFT JOIN entry_times t ON t.entry_kind = 'root' AND t.entry_id = ''
            """
        ) { row in
            Entry(
                ref: .root, name: "", parent: nil, kind: .directory, size: 0,
                modifiedNanoseconds: row.optionalInt64(4) ?? openedNanoseconds, mode: 0o755, cookie: 0,
                subdirectories: row.int(0),
                localTimes: LocalTimes(
                    changedNanoseconds: row.optionalInt64(1), changedAtModifiedNanoseconds: row.optionalInt64(2),
                    accessedNanoseconds: row.optionalInt64(3)))
        } ?? Entry(ref: .root, name: "", parent: nil, kind: .directory, size: 0,
                   modifiedNanoseconds: openedNanoseconds, mode: 0o755, cookie: 0)
    }

    /// The entry named `name` in `directory`, or nil.
    func lookup(in directory: DirectoryRef, name: String) throws(StoreError) -> Entry? {
        try readOneStatement { db in try self.lookup(db, in: directory, name: name) }
    }

    func lookup(_ db: Connection, in directory: DirectoryRef, name: String) throws -> Entry? {
        try db.queryOne(Self.lookupSelect, directory.key, name) { Self.entry(from: $0) } ?? nil
    }

    /// The live entry for `ref`, or nil when it no longer exists.
    func entry(for ref: EntryRef) throws(StoreError) -> Entry? {
        try readOneStatement { db in try self.entry(db, for: ref) }
    }

    func entry(_ db: Connection, for ref: EntryRef) throws -> Entry? {
        if ref == .root { return try rootEntry(db) }
        return try db.queryOne(Self.entryByRefSelect, ref.kindCode, ref.idText) { Self.entry(from: $0) } ?? nil
    }

    /// Entries of `directory` with cookies greater than `afterCookie`, in cookie order.
    func list(
        directory: DirectoryRef, afterCookie: Int64 = 0, limit: Int = 1_000
    ) throws(StoreError) -> [Entry] {
        try StoreError.wrap {
            try queue.sync { db in
                // The stamp is taken before the listing is read: a commit in
                // between can only make the kept listing look older than it
                // is (a later miss), never newer.
                let stamp = ListingCache.Stamp(
                    ownChanges: db.totalChanges,
                    dataVersion: try db.queryOne("PRAGMA data_version") { $0.int64(0) } ?? 0)
                switch listingCache.listing(of: directory, at: stamp) {
                case .entries(let all):
                    return ListingCache.page(of: all, after: afterCookie, limit: limit)
                case .tooLarge:
                    return try Self.listPage(db, directory, after: afterCookie, limit: limit)
                case .unknown:
                    let most = ListingCache.entriesPerDirectoryMax
                    let all = try Self.listPage(db, directory, after: 0, limit: most + 1)
                    guard all.count <= most else {
                        listingCache.keep(nil, of: directory, at: stamp)
                        return try Self.listPage(db, directory, after: afterCookie, limit: limit)
                    }
                    listingCache.keep(all, of: directory, at: stamp)
                    return ListingCache.page(of: all, after: afterCookie, limit: limit)
                }
            }
        }
    }

    /// One page of a listing from the database, in cookie order.
    private static func listPage(_ db: Connection, _ directory: DirectoryRef, after cookie: Int64, limit: Int) throws
        -> [Entry]
    {
        var page = try db.query(listSelect, directory.key, cookie, limit) { row in
            entry(from: row, parent: directory).map { entry in
                var entry = entry
                entry.inode = row.optionalInt64(13).map { UInt64(bitPattern: $0) }
                return entry
            }
        }.compactMap { $0 }
        page.sort { $0.cookie < $1.cookie }
        return page
    }

    /// True when `directory` exists here (the root, a live folder, a local directory).
    func directoryExists(_ db: Connection, _ directory: DirectoryRef) throws -> Bool {
        switch directory {
        case .root: return true
        case .folder(let id):
            return try db.queryOne("SELECT 1 FROM folders WHERE id = ? AND deleted = 0", id.description) { _ in
                true
            } ?? false
        case .local(let seq):
            return try db.queryOne("SELECT type FROM local_entries WHERE seq = ?", seq) { $0.int(0) }
                == EntryKind.directory.rawValue
        }
    }

    /// Up to `count` bytes of a note or local file from `offset`. `view` is
    /// the `kernelViewGeneration` read before the kernel last learned the
    /// file's size (nil when the reader is not the kernel): a read through a
    /// view that a pull has since made stale is served from the text that view
    /// saw, the text whose size the kernel still holds (see `KernelViewLedger`).
    func read(_ ref: EntryRef, offset: Int64, count: Int, view: UInt64? = nil) throws(StoreError) -> Data {
        guard offset >= 0, count >= 0 else { throw .invalidName("negative offset or count") }
        if case .note(let id) = ref, let seen = textSeen(byKernelView: view, of: id) {
            guard offset < Int64(seen.count) else { return Data() }
            let start = seen.startIndex + Int(offset)
            return seen.subdata(in: start..<start + min(count, seen.endIndex - start))
        }
        let whole = try readOneStatement { db -> Data? in
            let data: Data?
            switch ref {
            case .note(let id):
                // A chunked body (chunk_bytes > 0) reads as NULL here and is
                // read below from its chunks, in a transaction of its own.
                let found = try db.queryOne(
                    "SELECT chunk_bytes, CASE chunk_bytes WHEN 0 THEN substr(body, ?, ?) END FROM notes WHERE id = ? AND deleted = 0",
                    offset + 1, count, id.description
                ) { ($0.int64(0), $0.data(1)) }
                guard let found else { throw StoreError.notFound(ref.description) }
                if found.0 > 0 { return nil }
                data = found.1
            case .local(let seq):
                data = try self.readLocalFile(db, seq: seq, offset: offset, count: count)
            case .root, .folder:
                throw StoreError.isADirectory(ref.description)
            }
            guard let data else { throw StoreError.notFound(ref.description) }
            return data
        }
        if let whole { return whole }
        guard case .note(let id) = ref else { throw .notFound(ref.description) }
        return try read { db in
            guard
                let (seq, chunkBytes, size) = try db.queryOne(
                    "SELECT seq, chunk_bytes, body_size FROM notes WHERE id = ? AND deleted = 0", id.description,
                    map: { ($0.int64(0), $0.int64(1), $0.int64(2)) })
            else { throw StoreError.notFound(ref.description) }
            guard chunkBytes > 0 else {
                return try db.queryOne(
                    "SELECT substr(body, ?, ?) FROM notes WHERE seq = ?", offset + 1, count, seq, map: { $0.data(0) })
                    ?? Data()
            }
            return try NoteChunks.read(db, seq: seq, chunkBytes: chunkBytes, size: size, offset: offset, count: count)
        }
    }

    /// A note's or local file's whole content.
    func contents(of ref: EntryRef) throws(StoreError) -> Data {
        try read(ref, offset: 0, count: Int(Int32.max))
    }

    /// The target of a local-only symbolic link.
    func readLink(_ ref: EntryRef) throws(StoreError) -> String {
        guard case .local(let seq) = ref else { throw .notPermitted("only local-only entries can be links") }
        return try read { db in
            guard let row = try LocalRow.load(db, seq: seq), row.kind == .symlink else {
                throw StoreError.notPermitted("not a symbolic link")
            }
            return String(decoding: row.data, as: UTF8.self)
        }
    }

    /// The entity an entry stands for (nil for the root and local-only
    /// entries), its state and server version, for `user.notesfs.*` attributes.
    func syncInfo(for ref: EntryRef) throws(StoreError) -> (entity: EntityRef?, state: SyncState, version: Int64?) {
        try read { db in
            switch ref {
            case .note(let id):
                guard let row = try NoteRow.load(db, id: id) else { throw StoreError.notFound(ref.description) }
                return (.note(id), try self.state(db, .note(id), dirty: row.isDirty,
                    conflictCopy: Self.isConflictCopy(row)), row.serverVersion)
            case .folder(let id):
                guard let row = try FolderRow.load(db, id: id) else { throw StoreError.notFound(ref.description) }
                return (.folder(id), try self.state(db, .folder(id), dirty: row.isDirty, conflictCopy: false),
                    row.serverVersion)
            case .local(let seq):
                let origin = try LocalRow.load(db, seq: seq)?.origin
                return (nil, origin == LocalOrigin.refused ? .refused : .local, nil)
            case .root:
                return (nil, .synced, nil)
            }
        }
    }

    private func state(_ db: Connection, _ entity: EntityRef, dirty: Bool, conflictCopy: Bool) throws -> SyncState {
        if try dirty || hasOutbox(db, entity) { return .pending }
        return conflictCopy ? .conflictCopy : .synced
    }
}

/// Why a local-only entry exists, when it is not an ordinary scratch file.
enum LocalOrigin {
    /// The text of a change the server refused.
    static let refused = "refused"
}
