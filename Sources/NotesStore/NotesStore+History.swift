import Foundation
import NotesModel
import SQLiteKit

// The local history: bodies replaced by a truncation or a large shrink, kept
// for restore, bounded in age and bytes, shown under .notesfs/history/.
//
// Listing and reading cost what is listed: entries are paged by their seq
// from a covering index (`history_listing`), one row per entry, and a body is
// only read when its own entry is. The size cap is held to a running total
// (`history_total`, kept by triggers); pruning runs off the save path, in
// bounded steps (`HistoryPruner`).
extension NotesStore {
    func addHistory(_ db: Connection, noteID: NoteID, title: String, body: Data, reason: HistoryReason) throws {
        let latest = try db.queryOne(
            "SELECT body FROM history WHERE note_id = ? ORDER BY seq DESC LIMIT 1", noteID.description
        ) { $0.data(0) }
        guard latest != body else { return }
        // The path as shown when the copy was kept: what the person saw.
        let shown = try path(db, of: .note(noteID)) ?? title
        try db.run(
            "INSERT INTO history(note_id, title, body, saved_ns, reason, path, size) VALUES (?, ?, ?, ?, ?, ?, ?)",
            noteID.description, title, body, now, reason.stored, String(shown.drop { $0 == "/" }),
            Int64(body.count))
        if try historyNeedsPruning(db) { historyPruner.schedule() }
    }

    /// True when the history is past its size cap or holds an entry past its
    /// age: two reads of one row each, so every history insert can ask.
    func historyNeedsPruning(_ db: Connection) throws -> Bool {
        let total = try db.queryOne("SELECT bytes FROM history_total WHERE id = 1") { $0.int64(0) } ?? 0
        if total > configuration.historyMaxBytes { return true }
        let oldest = try db.queryOne(
            "SELECT saved_ns FROM history INDEXED BY history_listing ORDER BY seq LIMIT 1"
        ) { $0.int64(0) }
        return oldest.map { $0 < now - configuration.historyRetentionNanoseconds } ?? false
    }

    /// The bytes and entries the history holds now (its running total).
    func historyTotal() throws(StoreError) -> HistoryTotal {
        try readOneStatement { db in
            try db.queryOne("SELECT bytes, entries FROM history_total WHERE id = 1") {
                HistoryTotal(bytes: $0.int64(0), entries: $0.int64(1))
            } ?? HistoryTotal(bytes: 0, entries: 0)
        }
    }

    /// What a listing reads of an entry: every column but the title and the
    /// body, all from the covering index `history_listing` (the table's row
    /// holds the body before `path` and `size`, which would make SQLite walk
    /// the body's overflow pages to reach them).
    static let historyListingSelect =
        "SELECT seq, note_id, size, saved_ns, reason, path FROM history INDEXED BY history_listing"

    static func historyEntry(from row: Row) -> HistoryEntry? {
        guard let id = NoteID(row.string(1)) else { return nil }
        return HistoryEntry(
            seq: row.int64(0), noteID: id, path: row.string(5), size: row.int64(2), savedNanoseconds: row.int64(3),
            reason: HistoryReason(stored: row.string(4)))
    }

    /// History entries, newest first; for one note when `noteID` is given.
    func history(for noteID: NoteID? = nil) throws(StoreError) -> [HistoryEntry] {
        try readOneStatement { db in
            if let noteID {
                return try db.query(
                    Self.historyListingSelect + " WHERE note_id = ? ORDER BY seq DESC", noteID.description,
                    map: Self.historyEntry
                ).compactMap { $0 }
            }
            return try db.query(Self.historyListingSelect + " ORDER BY seq DESC", map: Self.historyEntry)
                .compactMap { $0 }
        }
    }

    /// Up to `limit` history entries with a seq above `afterSeq`, oldest
    /// first: one page of a listing, read from the listing index alone.
    func historyPage(afterSeq: Int64, limit: Int) throws(StoreError) -> [HistoryEntry] {
        try readOneStatement { db in
            try db.query(
                Self.historyListingSelect + " WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, max(0, limit),
                map: Self.historyEntry
            ).compactMap { $0 }
        }
    }

    /// The history entry `seq`, or nil when it is gone (restored entries stay; pruned ones go).
    func historyEntry(_ seq: Int64) throws(StoreError) -> HistoryEntry? {
        try readOneStatement { db in
            try db.queryOne(Self.historyListingSelect + " WHERE seq = ?", seq, map: Self.historyEntry) ?? nil
        }
    }

    /// The history entry shown under `name` (in `.notesfs/history` and by
    /// `notesfs restore`), or nil when no entry has that name now.
    func historyEntry(named name: String) throws(StoreError) -> HistoryEntry? {
        guard let seq = HistoryEntry.seq(fromName: name), let entry = try historyEntry(seq), entry.name == name
        else { return nil }
        return entry
    }

    /// The bytes a history entry kept.
    func historyBody(_ seq: Int64) throws(StoreError) -> Data {
        try readOneStatement { db in
            guard let body = try db.queryOne("SELECT body FROM history WHERE seq = ?", seq, map: { $0.data(0) }) else {
                throw StoreError.notFound("history entry \(seq)")
            }
            return body
        }
    }

    /// Puts a history entry's bytes back into its note as an edit (the
    /// current bytes go to the history if the restore shrinks them). When the
    /// note is gone, it comes back as a new note in its own folder: the one it
    /// was deleted from, or else the folders of the path it had when the copy
    /// was kept, made again where they are gone.
    @discardableResult
    func restore(historyEntry seq: Int64) throws(StoreError) -> NoteID {
        try write(origin: .local) { db, commit in
            guard
                let (noteText, title, body, path) = try db.queryOne(
                    "SELECT note_id, title, body, path FROM history WHERE seq = ?", seq,
                    map: { ($0.string(0), $0.string(1), $0.data(2), $0.string(3)) })
            else { throw StoreError.notFound("history entry \(seq)") }
            let row = try NoteID(noteText).flatMap { id throws -> NoteRow? in try NoteRow.load(db, id: id) }
            if let row, !row.deleted {
                var content = row.content
                content.body = body
                try editNote(db, row, to: content, commit: &commit)
                return row.id
            }
            let directory = try restoreDirectory(db, deletedFrom: row?.content.folderID, path: path, commit: &commit)
            let id = NoteID(newUUID())
            try insertNote(
                db, id: id, content: NoteContent(title: title, body: body, folderID: folderID(of: directory)),
                commit: &commit)
            return id
        }
    }

    /// Where a gone note's text goes back: the folder it was deleted from
    /// when that folder is live, else the folders of `path` (its path when
    /// the copy was kept, without the leading `/`), made again where missing.
    func restoreDirectory(
        _ db: Connection, deletedFrom folder: FolderID?, path: String, commit: inout StoreCommit
    ) throws -> DirectoryRef {
        if let folder, let row = try FolderRow.load(db, id: folder), !row.deleted,
            try NameRow.find(db, entry: .folder(folder)) != nil
        {
            return .folder(folder)
        }
        var directory = DirectoryRef.root
        for name in path.split(separator: "/").dropLast().map(String.init) {
            if let existing = try NameRow.find(db, in: directory, name: name) {
                guard case .folder(let id) = existing.entry else { break }
                directory = .folder(id)
            } else {
                guard !isLocalOnly(directory, name) else { break }
                directory = .folder(try makeFolder(db, in: directory, name: name, mode: 0o755, commit: &commit))
            }
        }
        return directory
    }
}
