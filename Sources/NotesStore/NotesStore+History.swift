import Foundation
import NotesModel
import SQLiteKit
import Synchronization

/// A body kept because a commit truncated it or shrank it by more than half.
public struct HistoryEntry: Hashable, Sendable {
    public var seq: Int64
    public var noteID: NoteID
    public var title: String
    public var size: Int64
    public var savedNanoseconds: Int64
    /// `truncated` or `shrunk`.
    public var reason: String
}

// The local history: bounded in age and bytes, shown under .notesfs/history/.
extension NotesStore {
    func addHistory(_ db: Connection, noteID: NoteID, title: String, body: Data, reason: String) throws {
        let latest = try db.queryOne(
            "SELECT body FROM history WHERE note_id = ? ORDER BY seq DESC LIMIT 1", noteID.description
        ) { $0.data(0) }
        guard latest != body else { return }
        try db.run(
            "INSERT INTO history(note_id, title, body, saved_ns, reason) VALUES (?, ?, ?, ?, ?)",
            noteID.description, title, body, now, reason)
        try pruneHistory(db)
    }

    /// Drops entries past the retention age, then the oldest ones past the size cap.
    func pruneHistory(_ db: Connection) throws {
        // Entries are added in time order, so the oldest come first by seq:
        // stop at the first one still young. No pass over the whole table per
        // save; a clock set back only keeps entries longer, never shorter.
        let cutoff = now - configuration.historyRetentionNanoseconds
        while let (seq, saved) = try db.queryOne(
            "SELECT seq, saved_ns FROM history ORDER BY seq LIMIT 1", map: { ($0.int64(0), $0.int64(1)) }),
            saved < cutoff
        {
            try db.run("DELETE FROM history WHERE seq = ?", seq)
        }
        // The size cap needs every entry's length (~13 ms for 20,000 entries):
        // checked at the first truncation and then at most once a minute, so
        // the history passes its cap by at most a minute of truncations.
        guard historySizeCheck.due(at: now) else { return }
        var total = try db.queryOne("SELECT COALESCE(sum(length(body)), 0) FROM history") { $0.int64(0) } ?? 0
        while total > configuration.historyMaxBytes {
            guard
                let (seq, size) = try db.queryOne(
                    "SELECT seq, length(body) FROM history ORDER BY seq LIMIT 1", map: { ($0.int64(0), $0.int64(1)) })
            else { break }
            try db.run("DELETE FROM history WHERE seq = ?", seq)
            total -= size
        }
    }

    /// History entries, newest first; for one note when `noteID` is given.
    public func history(for noteID: NoteID? = nil) throws(StoreError) -> [HistoryEntry] {
        try read { db in
            let map: (Row) -> HistoryEntry? = { row in
                guard let id = NoteID(row.string(1)) else { return nil }
                return HistoryEntry(
                    seq: row.int64(0), noteID: id, title: row.string(2), size: row.int64(3),
                    savedNanoseconds: row.int64(4), reason: row.string(5))
            }
            let sql = "SELECT seq, note_id, title, length(body), saved_ns, reason FROM history"
            if let noteID {
                return try db.query(sql + " WHERE note_id = ? ORDER BY seq DESC", noteID.description, map: map)
                    .compactMap { $0 }
            }
            return try db.query(sql + " ORDER BY seq DESC", map: map).compactMap { $0 }
        }
    }

    /// The bytes a history entry kept.
    public func historyBody(_ seq: Int64) throws(StoreError) -> Data {
        try read { db in
            guard let body = try db.queryOne("SELECT body FROM history WHERE seq = ?", seq, map: { $0.data(0) }) else {
                throw StoreError.notFound("history entry \(seq)")
            }
            return body
        }
    }

    /// Puts a history entry's bytes back into its note as an edit (the
    /// current bytes go to the history if the restore shrinks them). When the
    /// note is gone, it comes back as a new note in the root.
    @discardableResult
    public func restore(historyEntry seq: Int64) throws(StoreError) -> NoteID {
        try write(origin: .local) { db, commit in
            guard
                let (noteText, title, body) = try db.queryOne(
                    "SELECT note_id, title, body FROM history WHERE seq = ?", seq,
                    map: { ($0.string(0), $0.string(1), $0.data(2)) })
            else { throw StoreError.notFound("history entry \(seq)") }
            if let id = NoteID(noteText), let row = try NoteRow.load(db, id: id), !row.deleted {
                var content = row.content
                content.body = body
                try editNote(db, row, to: content, commit: &commit)
                return id
            }
            let id = NoteID(newUUID())
            try insertNote(db, id: id, content: NoteContent(title: title, body: body, folderID: nil), commit: &commit)
            return id
        }
    }
}

/// When the history's size was last checked against its cap.
final class HistorySizeCheck: Sendable {
    /// How often the size cap is checked at most.
    static let intervalNanoseconds: Int64 = 60 * 1_000_000_000
    private let lastCheck = Mutex<Int64?>(nil)

    /// True (and remembered) when the last check is an interval old or more, or never ran.
    func due(at now: Int64) -> Bool {
        lastCheck.withLock { last in
            if let previous = last, now >= previous, now - previous < Self.intervalNanoseconds { return false }
            last = now
            return true
        }
    }
}
