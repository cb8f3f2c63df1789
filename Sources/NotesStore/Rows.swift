import Foundation
import NotesModel
import SQLiteKit

/// A note row as stored, with its sync bookkeeping.
struct NoteRow {
    var seq: Int64
    var id: NoteID
    var folderID: FolderID?
    var title: String
    var body: Data
    var createdNanoseconds: Int64
    var updatedNanoseconds: Int64
    var mode: UInt32
    var deleted: Bool
    var serverVersion: Int64?
    /// What the server last confirmed; nil when it has nothing live (never synced, or a tombstone).
    var base: NoteContent?
    var localRev: Int64
    var syncedRev: Int64
    var conflictOf: NoteID?
    /// Nonzero when the body is kept in chunks of this size (see `NoteChunks`).
    var chunkBytes: Int64
    var bodySize: Int64

    var content: NoteContent { NoteContent(title: title, body: body, folderID: folderID) }
    var isDirty: Bool { localRev != syncedRev }

    static let columns = """
        seq, id, folder_id, title, body, created_ns, updated_ns, mode, deleted, server_version,
        base_exists, base_title, base_body, base_folder_id, local_rev, synced_rev, conflict_of, chunk_bytes, body_size
        """

    /// Nil when the stored id is not a UUID (a damaged row is skipped, not trusted).
    init?(row: Row) {
        guard let id = NoteID(row.string(1)) else { return nil }
        seq = row.int64(0)
        self.id = id
        folderID = row.optionalString(2).flatMap(FolderID.init)
        title = row.string(3)
        body = row.data(4)
        createdNanoseconds = row.int64(5)
        updatedNanoseconds = row.int64(6)
        mode = UInt32(truncatingIfNeeded: row.int64(7))
        deleted = row.bool(8)
        serverVersion = row.optionalInt64(9)
        base =
            row.bool(10)
            ? NoteContent(
                title: row.string(11), body: row.data(12), folderID: row.optionalString(13).flatMap(FolderID.init))
            : nil
        localRev = row.int64(14)
        syncedRev = row.int64(15)
        conflictOf = row.optionalString(16).flatMap(NoteID.init)
        chunkBytes = row.int64(17)
        bodySize = row.int64(18)
    }

    private static let select = "SELECT \(columns) FROM notes WHERE id = ?"

    /// The note with its whole body (joined from its chunks when it has them).
    static func load(_ db: Connection, id: NoteID) throws -> NoteRow? {
        guard var row = try db.queryOne(select, id.description, map: NoteRow.init)
            ?? nil
        else { return nil }
        if row.chunkBytes > 0 { row.body = try NoteChunks.assemble(db, seq: row.seq, size: row.bodySize) }
        return row
    }
}

/// A folder row as stored, with its sync bookkeeping.
struct FolderRow {
    var seq: Int64
    var id: FolderID
    var parentID: FolderID?
    var name: String
    var createdNanoseconds: Int64
    var updatedNanoseconds: Int64
    var mode: UInt32
    var deleted: Bool
    var serverVersion: Int64?
    var base: FolderContent?
    var localRev: Int64
    var syncedRev: Int64

    var content: FolderContent { FolderContent(name: name, parentID: parentID) }
    var isDirty: Bool { localRev != syncedRev }

    static let columns = """
        seq, id, parent_id, name, created_ns, updated_ns, mode, deleted, server_version,
        base_exists, base_name, base_parent_id, local_rev, synced_rev
        """

    init?(row: Row) {
        guard let id = FolderID(row.string(1)) else { return nil }
        seq = row.int64(0)
        self.id = id
        parentID = row.optionalString(2).flatMap(FolderID.init)
        name = row.string(3)
        createdNanoseconds = row.int64(4)
        updatedNanoseconds = row.int64(5)
        mode = UInt32(truncatingIfNeeded: row.int64(6))
        deleted = row.bool(7)
        serverVersion = row.optionalInt64(8)
        base =
            row.bool(9)
            ? FolderContent(name: row.string(10), parentID: row.optionalString(11).flatMap(FolderID.init)) : nil
        localRev = row.int64(12)
        syncedRev = row.int64(13)
    }

    static func load(_ db: Connection, id: FolderID) throws -> FolderRow? {
        try db.queryOne("SELECT \(columns) FROM folders WHERE id = ?", id.description) { FolderRow(row: $0) } ?? nil
    }
}

/// A local-only entry row.
struct LocalRow {
    var seq: Int64
    var kind: EntryKind
    /// A symbolic link's target; a file's bytes when `file` is nil.
    var data: Data
    var mode: UInt32
    var createdNanoseconds: Int64
    var updatedNanoseconds: Int64
    var origin: String?
    /// The backing file holding a regular file's bytes (`LocalFileDirectory`).
    var file: String?
    var size: Int64

    static func load(_ db: Connection, seq: Int64) throws -> LocalRow? {
        try db.queryOne(
            "SELECT seq, type, data, mode, created_ns, updated_ns, origin, file, size FROM local_entries WHERE seq = ?",
            seq
        ) { row in
            LocalRow(
                seq: row.int64(0), kind: EntryKind(rawValue: row.int(1)) ?? .file, data: row.data(2),
                mode: UInt32(truncatingIfNeeded: row.int64(3)), createdNanoseconds: row.int64(4),
                updatedNanoseconds: row.int64(5), origin: row.optionalString(6), file: row.optionalString(7),
                size: row.int64(8))
        }
    }
}

/// A row of the `names` table: one name shown in one directory.
struct NameRow {
    var seq: Int64
    var directory: DirectoryRef
    var name: String
    var entry: EntryRef
    var source: String

    static let columns = "seq, parent_key, name, entry_kind, entry_id, source"
    private static let selectByName = "SELECT \(columns) FROM names WHERE parent_key = ? AND name = ?"
    private static let selectByEntry = "SELECT \(columns) FROM names WHERE entry_kind = ? AND entry_id = ?"

    init?(row: Row) {
        guard let directory = DirectoryRef(key: row.string(1)),
            let entry = EntryRef(kindCode: row.string(3), idText: row.string(4))
        else { return nil }
        seq = row.int64(0)
        self.directory = directory
        name = row.string(2)
        self.entry = entry
        source = row.string(5)
    }

    static func find(_ db: Connection, in directory: DirectoryRef, name: String) throws -> NameRow? {
        try db.queryOne(selectByName, directory.key, name) { NameRow(row: $0) } ?? nil
    }

    /// True when `directory` lists `name` (the unique index alone answers).
    static func exists(_ db: Connection, in directory: DirectoryRef, name: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM names WHERE parent_key = ? AND name = ?", directory.key, name) { _ in true }
            ?? false
    }

    static func find(_ db: Connection, entry: EntryRef) throws -> NameRow? {
        try db.queryOne(selectByEntry, entry.kindCode, entry.idText) { NameRow(row: $0) } ?? nil
    }
}
