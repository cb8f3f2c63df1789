import Foundation
import NotesModel
import SQLiteKit

// Listing and settling conflict copies. Resolving is an ordinary local edit
// of the note and a delete of the copy, in one transaction, so it syncs to
// every machine like any other edit.
extension NotesStore {
    /// Every live conflict copy with its note, in the order they were made.
    func conflictCopies() throws(StoreError) -> [ConflictCopyInfo] {
        try read { db in
            let rows = try db.query(
                """
                SELECT id FROM notes WHERE deleted = 0
                  AND (conflict_of IS NOT NULL OR instr(title, ' (conflicted copy ') > 0) ORDER BY seq
                """
            ) { NoteID($0.string(0)) }
            var copies: [ConflictCopyInfo] = []
            for case let id? in rows {
                guard let row = try NoteRow.load(db, id: id), let copyPath = try path(db, of: .note(id)) else { continue }
                let note = try noteOfConflictCopy(db, row)
                copies.append(
                    ConflictCopyInfo(
                        copy: id, copyPath: copyPath, note: note,
                        notePath: try note.flatMap { try path(db, of: .note($0)) }))
            }
            return copies
        }
    }

    /// The live note a conflict copy was made of, or nil.
    func noteOfConflictCopy(_ db: Connection, _ copy: NoteRow) throws -> NoteID? {
        if let note = copy.conflictOf {
            return try NoteRow.load(db, id: note).flatMap { $0.deleted ? nil : $0.id }
        }
        guard let title = ConflictPolicy.originalTitle(ofConflictCopy: copy.title) else { return nil }
        return try db.queryOne(
            """
            SELECT id FROM notes WHERE deleted = 0 AND title = ? AND folder_id IS ? AND id != ?
            ORDER BY seq LIMIT 1
            """, title, copy.folderID?.description, copy.id.description
        ) { NoteID($0.string(0)) } ?? nil
    }

    /// Settles conflict copy `copy`: keeps the note, the copy's text, or both
    /// (the copy's lines the note lacks added at its end), then deletes the
    /// copy. Returns the note. Fails when `copy` is not a live conflict copy,
    /// or when its note is gone and `keep` is not `.note` (rename the copy to keep it).
    @discardableResult
    func resolveConflictCopy(_ copy: NoteID, keep: ConflictResolution) throws(StoreError) -> NoteID? {
        try write(origin: .local) { db, commit in
            guard let copyRow = try NoteRow.load(db, id: copy), !copyRow.deleted, Self.isConflictCopy(copyRow) else {
                throw StoreError.notFound("a conflict copy with id \(copy)")
            }
            let note = try noteOfConflictCopy(db, copyRow).flatMap { try NoteRow.load(db, id: $0) }
            switch (keep, note) {
            case (.note, _):
                break
            case (.copy, let note?):
                var content = note.content
                content.body = copyRow.body
                try editNote(db, note, to: content, commit: &commit)
            case (.both, let note?):
                var content = note.content
                content.body = TextMerge.appendingMissingLines(of: copyRow.body, to: note.body)
                try editNote(db, note, to: content, commit: &commit)
            case (.copy, nil), (.both, nil):
                throw StoreError.notFound("the note of '\(copyRow.title)' (rename the copy to keep it as a note)")
            }
            // Kept only as a note, the copy's text is dropped: the trash keeps it.
            try deleteNote(db, copyRow, intoTrash: keep == .note, commit: &commit)
            return note?.id
        }
    }

    /// The note at `path` in the mount (`/a/b.md`, or `a/b.md`), or nil.
    func noteID(atPath path: String) throws(StoreError) -> NoteID? {
        try read { db in
            var directory = DirectoryRef.root
            let names = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            for (index, name) in names.enumerated() {
                guard let entry = try lookup(db, in: directory, name: name) else { return nil }
                if index == names.count - 1 {
                    if case .note(let id) = entry.ref { return id }
                    return nil
                }
                switch entry.ref {
                case .folder(let id): directory = .folder(id)
                default: return nil
                }
            }
            return nil
        }
    }
}
