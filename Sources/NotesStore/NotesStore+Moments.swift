import Foundation
import NotesModel
import SQLiteKit

/// What this machine's own records say of its notes and folders, without
/// their text: enough to rebuild a past moment when the server cannot be
/// asked (`OfflineMoment`).
public struct MomentRecords: Sendable {
    public struct Note: Sendable {
        public var id: NoteID
        public var title: String
        public var folderID: FolderID?
        /// When this machine first had the note (made here or pulled).
        public var createdNanoseconds: Int64
        /// When its text, title or folder last changed here.
        public var updatedNanoseconds: Int64
        /// When it was deleted, for a deleted note (the trash's time, else its last change).
        public var deletedNanoseconds: Int64?
        public var size: Int64

        public init(
            id: NoteID, title: String, folderID: FolderID?, createdNanoseconds: Int64, updatedNanoseconds: Int64,
            deletedNanoseconds: Int64?, size: Int64
        ) {
            self.id = id
            self.title = title
            self.folderID = folderID
            self.createdNanoseconds = createdNanoseconds
            self.updatedNanoseconds = updatedNanoseconds
            self.deletedNanoseconds = deletedNanoseconds
            self.size = size
        }
    }

    public struct Folder: Sendable {
        public var id: FolderID
        public var name: String
        public var parentID: FolderID?
        public var createdNanoseconds: Int64
        /// For a deleted folder, when it was deleted (its last change).
        public var deletedNanoseconds: Int64?

        public init(
            id: FolderID, name: String, parentID: FolderID?, createdNanoseconds: Int64, deletedNanoseconds: Int64?
        ) {
            self.id = id
            self.name = name
            self.parentID = parentID
            self.createdNanoseconds = createdNanoseconds
            self.deletedNanoseconds = deletedNanoseconds
        }
    }

    /// A local history entry: the text a note had until a save at `savedNanoseconds`.
    public struct Kept: Sendable {
        public var seq: Int64
        public var noteID: NoteID
        public var savedNanoseconds: Int64
        public var size: Int64

        public init(seq: Int64, noteID: NoteID, savedNanoseconds: Int64, size: Int64) {
            self.seq = seq
            self.noteID = noteID
            self.savedNanoseconds = savedNanoseconds
            self.size = size
        }
    }

    public var notes: [Note]
    public var folders: [Folder]
    public var kept: [Kept]

    public init(notes: [Note], folders: [Folder], kept: [Kept]) {
        self.notes = notes
        self.folders = folders
        self.kept = kept
    }
}

/// A past moment rebuilt from this machine's own records: every note and
/// folder it had by then and had not deleted by then, each note with the
/// text it had then when that is known. A note changed since has its text
/// of then only when the local history kept it (the oldest copy kept after
/// the moment); otherwise it shows the oldest text this machine still has,
/// which is later than the moment, and is counted in `laterTexts`.
public enum OfflineMoment {
    public static func items(at nanoseconds: Int64, from records: MomentRecords) -> (
        items: [MomentItem], laterTexts: Int
    ) {
        var items: [MomentItem] = []
        for folder in records.folders
        where folder.createdNanoseconds <= nanoseconds && (folder.deletedNanoseconds.map { $0 > nanoseconds } ?? true) {
            items.append(
                MomentItem(
                    kind: .folder, id: folder.id.uuid, name: folder.name, parentID: folder.parentID?.uuid, size: 0,
                    modifiedNanoseconds: folder.createdNanoseconds, body: nil))
        }
        // The oldest copy kept after the moment, per note.
        var keptAfter: [NoteID: MomentRecords.Kept] = [:]
        for kept in records.kept where kept.savedNanoseconds > nanoseconds {
            if let found = keptAfter[kept.noteID], found.savedNanoseconds <= kept.savedNanoseconds { continue }
            keptAfter[kept.noteID] = kept
        }
        var laterTexts = 0
        for note in records.notes
        where note.createdNanoseconds <= nanoseconds && (note.deletedNanoseconds.map { $0 > nanoseconds } ?? true) {
            var item = MomentItem(
                kind: .note, id: note.id.uuid, name: note.title, parentID: note.folderID?.uuid, size: note.size,
                modifiedNanoseconds: note.updatedNanoseconds, body: .note(note.id))
            if note.deletedNanoseconds == nil && note.updatedNanoseconds <= nanoseconds {
                // Unchanged since: this machine's copy is the text of then.
            } else if let kept = keptAfter[note.id] {
                item.body = .history(kept.seq)
                item.size = kept.size
                item.modifiedNanoseconds = min(note.updatedNanoseconds, nanoseconds)
            } else {
                item.modifiedNanoseconds = min(note.updatedNanoseconds, nanoseconds)
                laterTexts += 1
            }
            items.append(item)
        }
        return (items, laterTexts)
    }
}

extension NotesStore {
    /// Every synced note and folder this machine has, deleted ones too, and
    /// the local history's entries, without any text (one read transaction).
    func momentRecords() throws(StoreError) -> MomentRecords {
        try read { db in
            let notes = try db.query(
                """
                SELECT n.id, n.title, n.folder_id, n.created_ns, n.updated_ns, n.deleted, t.deleted_ns, n.body_size
                FROM notes n LEFT JOIN trash t ON t.note_id = n.id
                """
            ) { row -> MomentRecords.Note? in
                guard let id = NoteID(row.string(0)) else { return nil }
                let deleted = row.int64(5) != 0
                return MomentRecords.Note(
                    id: id, title: row.string(1), folderID: row.optionalString(2).flatMap(FolderID.init),
                    createdNanoseconds: row.int64(3), updatedNanoseconds: row.int64(4),
                    deletedNanoseconds: deleted ? (row.optionalInt64(6) ?? row.int64(4)) : nil, size: row.int64(7))
            }.compactMap { $0 }
            let folders = try db.query(
                "SELECT id, name, parent_id, created_ns, updated_ns, deleted FROM folders"
            ) { row -> MomentRecords.Folder? in
                guard let id = FolderID(row.string(0)) else { return nil }
                return MomentRecords.Folder(
                    id: id, name: row.string(1), parentID: row.optionalString(2).flatMap(FolderID.init),
                    createdNanoseconds: row.int64(3), deletedNanoseconds: row.int64(5) != 0 ? row.int64(4) : nil)
            }.compactMap { $0 }
            let kept = try db.query(Self.historyListingSelect) { row -> MomentRecords.Kept? in
                guard let entry = Self.historyEntry(from: row) else { return nil }
                return MomentRecords.Kept(
                    seq: entry.seq, noteID: entry.noteID, savedNanoseconds: entry.savedNanoseconds, size: entry.size)
            }.compactMap { $0 }
            return MomentRecords(notes: notes, folders: folders, kept: kept)
        }
    }

    /// The text `body` stands for; a note this machine no longer has reads as
    /// `StoreError.notFound`.
    func momentText(_ body: MomentBody) throws(StoreError) -> Data {
        switch body {
        case .text(let data):
            return data
        case .history(let seq):
            return try historyBody(seq)
        case .server(let version):
            // The mount fetches these from the server; this machine never had them here.
            throw StoreError.notFound("version \(version) of a note from the server's history")
        case .note(let id):
            return try read { db in
                let found = try db.queryOne(
                    "SELECT seq, chunk_bytes, body_size, CASE chunk_bytes WHEN 0 THEN body END FROM notes WHERE id = ?",
                    id.description
                ) { ($0.int64(0), $0.int64(1), $0.int64(2), $0.optionalData(3)) }
                guard let (seq, chunkBytes, size, whole) = found else { throw StoreError.notFound("note \(id)") }
                if let whole { return whole }
                return try NoteChunks.read(
                    db, seq: seq, chunkBytes: chunkBytes, size: size, offset: 0, count: Int(clamping: size))
            }
        }
    }
}
