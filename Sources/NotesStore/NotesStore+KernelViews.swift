import Foundation
import NotesModel
import SQLiteKit

/// How a write the kernel sent was stored.
public struct KernelWriteResult: Sendable, Equatable {
    /// The file's size afterwards.
    public var size: Int64
    /// The stored text is not what the kernel believes it wrote (an append
    /// moved to the note's real end, or a merge with text the writer had not
    /// seen): the kernel's cached pages and size must be dropped.
    public var kernelViewStale: Bool

    public init(size: Int64, kernelViewStale: Bool) {
        self.size = size
        self.kernelViewStale = kernelViewStale
    }
}

// Writes through a stale view of a note: the kernel, and the program writing
// through it, had not seen a change that landed behind their back (a pull, a
// merge after a conflict). Such a write is a concurrent edit: the writer's
// text (what it saw, with its writes applied) is merged three-way with the
// note's current text; where the merge fails, the note keeps its text and
// the writer's becomes a conflict copy. Never a silent overwrite.
extension NotesStore {
    /// The view generation to hand back with writes, read before the kernel is
    /// told a note's size.
    var kernelViewGeneration: UInt64 { kernelViews.generation }

    /// True when a kernel write to note `id` through `view` applies as it is,
    /// with the same bookkeeping as `writeThroughStaleView`; false when it must
    /// go through that merge (a stale view, or a save already in a session).
    func kernelWriteAppliesAsItIs(_ id: NoteID, view: UInt64?) -> Bool {
        guard let view else {
            kernelViews.setSession(nil, of: id)
            return true
        }
        guard kernelViews.session(of: id, now: now) == nil else { return false }
        switch kernelViews.judge(id, view: view) {
        case .current, .forgotten:
            kernelViews.forget(id)
            return true
        case .stale:
            return false
        }
    }

    /// The text the kernel's view `view` of note `id` saw, when a change
    /// (a pull, a merge) has replaced it since; nil when the view is current,
    /// cannot be judged, or a save through a stale view is under way (it reads
    /// what it wrote). Until the kernel learns the new size, it cuts every
    /// read at the old one: serving it the current text would hand programs
    /// a text that never existed (the new text cut short), and their next
    /// save would be merged against the old text as if they had seen it,
    /// dropping the tail they were never shown.
    func textSeen(byKernelView view: UInt64?, of id: NoteID) -> Data? {
        guard let view, kernelViews.session(of: id, now: now) == nil,
            case .stale(let seen) = kernelViews.judge(id, view: view)
        else { return nil }
        return seen
    }

    /// Applies `change` to the writer's text when `row` is written through a
    /// stale view (or by a kernel writer already in such a session) and
    /// returns the note's new size; nil when the write applies as it is (a
    /// current view, or no view: not a write the kernel sent).
    func writeThroughStaleView(
        _ db: Connection, _ row: NoteRow, view: UInt64?, edit: KernelEdit, commit: inout StoreCommit
    ) throws -> Int64? {
        guard let view else {
            // Not a kernel write (import, restore, a tool on the store): it
            // applies as it is and ends any save through a stale view.
            kernelViews.setSession(nil, of: row.id)
            return nil
        }
        let time = now
        var session = kernelViews.session(of: row.id, now: time)
        if let open = session, case .write(let offset, _) = edit,
            !configuration.staleSaveTakesWrite(offset, open.writtenEnd)
        {
            // A save writes its text in order (after a truncation, or over
            // the old text from the start): a write that neither goes on
            // where the save's last one ended nor starts over is another
            // program's, at an offset into the text it was told (the merged
            // one, most likely its end). Spliced into the save's own text,
            // its bytes would land inside lines that text holds elsewhere.
            // It is judged by its own view, as if no save were under way.
            kernelViews.setSession(nil, of: row.id)
            session = nil
        } else if let open = session, let stored = open.stored, stored != row.body,
            case .current = kernelViews.judge(row.id, view: view)
        {
            // The note changed after the session's last write (a pull, a
            // merge), and this writer's view includes that change: it is not
            // the session's writer, who cannot have seen it (that one's view
            // is its open, older), but another program writing where the
            // current text put it. Spliced into the session's text instead,
            // its bytes would land inside lines that text holds elsewhere.
            kernelViews.setSession(nil, of: row.id)
            kernelViews.forget(row.id)
            return nil
        }
        if session == nil {
            switch kernelViews.judge(row.id, view: view) {
            case .current:
                kernelViews.forget(row.id)
            case .forgotten:
                // More replaced text than the ledger keeps: this write cannot
                // be judged and applies as it is, as before views were kept.
                kernelViews.forget(row.id)
            case .stale(let seen):
                // From here the session carries what the writer saw; later
                // writes after it ends are judged against the current text.
                let replaced = kernelViews.textsReplaced(since: view, of: row.id)
                kernelViews.forget(row.id)
                let learned = configuration.staleWritesFollowTheirOffset
                    ? Self.textLearned(by: edit, among: replaced, current: row.body) ?? seen : seen
                // It wrote where the current text ends: it learned that text.
                if learned == row.body { return nil }
                session = KernelViewLedger.Session(
                    view: learned, writer: learned, remote: row.body, lastWriteNanoseconds: time)
            }
        }
        guard var session else { return nil }
        if let stored = session.stored, stored != row.body {
            // Something else changed the note since this writer's last write
            // (a merge after a conflict, another program): that text is the
            // new remote side, and what this writer had made so far its view.
            session = KernelViewLedger.Session(
                view: session.writer, writer: session.writer, remote: row.body, lastWriteNanoseconds: time)
        }
        session.writer = edit.applied(to: session.writer)
        session.writtenEnd = edit.end
        session.lastWriteNanoseconds = time
        guard session.writer.count <= configuration.noteSizeLimitBytes else {
            throw StoreError.tooLarge(limit: configuration.noteSizeLimitBytes)
        }
        let stored = try mergeWriterSession(db, row, &session, commit: &commit)
        session.stored = stored
        kernelViews.setSession(session, of: row.id)
        return Int64(stored.count)
    }

    /// A rename over `target` (an atomic save: a temp file written, then
    /// renamed over the note) puts `body` into it. When the saving program
    /// read the note through a view a later change (a pull) replaced, the
    /// save is merged with that change exactly as a rewrite through that view
    /// would be; otherwise the body replaces the text as it is. Returns true
    /// when it was merged (the stored text is not `body`).
    func replaceText(
        _ db: Connection, of target: NoteRow, with body: Data, modified: Int64?, view: UInt64?,
        commit: inout StoreCommit
    ) throws -> Bool {
        kernelViews.setSession(nil, of: target.id)
        if let view, configuration.atomicSavesMergeStaleViews {
            let judgement = kernelViews.judge(target.id, view: view)
            kernelViews.forget(target.id)
            if case .stale(let seen) = judgement {
                var save = KernelViewLedger.Session(view: seen, writer: body, remote: target.body, lastWriteNanoseconds: now)
                return try mergeWriterSession(db, target, &save, commit: &commit) != body
            }
        }
        var content = target.content
        content.body = body
        try editNote(db, target, to: content, modified: modified, commit: &commit)
        return false
    }

    /// Puts `merge(seen, writer, remote)` into the note, or, where the lines
    /// clash, keeps the note's text and puts the writer's into the note's
    /// conflict copy from this device. Returns the note's body as stored.
    private func mergeWriterSession(
        _ db: Connection, _ row: NoteRow, _ session: inout KernelViewLedger.Session, commit: inout StoreCommit
    ) throws -> Data {
        func content(_ body: Data) -> NoteContent { NoteContent(title: row.title, body: body, folderID: row.folderID) }
        let merged = Self.keepingConflictCopiesWhole(
            row, configuration.mergeNote(content(session.view), content(session.writer), content(session.remote)))
        let clash = merged.conflictCopy != nil || merged.result == nil
        let noteBody = clash ? session.remote : (merged.result?.body ?? session.remote)
        try editNote(db, row, to: clash ? content(session.remote) : (merged.result ?? content(session.remote)),
                     commit: &commit)
        let copyID = try conflictCopyID(db, of: row.id)
        let copyRow = try NoteRow.load(db, id: copyID)
        // This session's text, still in the copy as the session left it.
        let own = session.copy.flatMap { own in
            copyRow.map { !$0.deleted && $0.body == own.stored } == true ? own : nil
        }
        let keep = clash && !TextMerge.containsEveryLine(of: session.writer, in: noteBody) ? session.writer : nil
        if let keep {
            // An earlier write of this save (a truncation before the rewrite)
            // is replaced; anything else in the copy stays.
            let before: Data?
            if let own, Self.isEarlierState(own.writer, of: session.writer) {
                before = own.before
            } else {
                before = copyRow.flatMap { $0.deleted ? nil : $0.body }
            }
            let body = before.map { ConflictPolicy.updatedConflictCopy(old: $0, new: keep) } ?? keep
            if copyRow.map({ $0.deleted || $0.body != body }) ?? true {
                try putConflictCopy(db, copyID, of: row, template: content(keep), body: body, commit: &commit)
            }
            session.copy = KernelViewLedger.CopyContribution(before: before, stored: body, writer: keep)
        } else if let own, let copyRow {
            // The save merged after all: its half-saved text leaves the copy
            // (which goes if it held nothing else), unless it holds lines the
            // save no longer has (another program's save joined within the
            // second: the copy is all that is left of it).
            if Self.isEarlierState(own.writer, of: session.writer, keptIn: noteBody) {
                if let before = own.before {
                    try putConflictCopy(db, copyID, of: row, template: copyRow.content, body: before, commit: &commit)
                } else {
                    try deleteNote(db, copyRow, intoTrash: false, commit: &commit)
                }
            }
            session.copy = nil
        }
        return noteBody
    }

    /// The text a write at a later offset through a stale view was written
    /// against, when its offset tells: the newest of the texts since its view
    /// (`replaced`, oldest first, then `current`) that ends exactly where the
    /// write begins. A program appends where `fstat` said the file ends, and
    /// the mount cannot always tell when that `fstat` came (Linux sends it
    /// without the descriptor's handle): a view older than the size the
    /// program learned would splice its line into a text of another length,
    /// after zeros or inside a line. Nil for a rewrite (offset 0), a
    /// truncation, or an offset that is no text's end.
    static func textLearned(by edit: KernelEdit, among replaced: [Data], current: Data) -> Data? {
        guard case .write(let offset, _) = edit, offset > 0 else { return nil }
        return (replaced + [current]).last { $0.count == offset }
    }

    /// A write or truncation as the kernel sent it, applied to a stale save's text.
    enum KernelEdit {
        case write(offset: Int, bytes: Data)
        case truncation(size: Int)

        func applied(to text: Data) -> Data {
            switch self {
            case .write(let offset, let bytes): NotesStore.splice(text, bytes, at: offset)
            case .truncation(let size): NotesStore.resized(text, to: size)
            }
        }

        /// Where the save's text is written through after this edit.
        var end: Int {
            switch self {
            case .write(let offset, let bytes): offset + bytes.count
            case .truncation(let size): size
            }
        }
    }

    /// True when a write at `offset` can be the next write of a save whose
    /// writes so far end at `writtenEnd`: it starts over at 0 or goes on
    /// where the last one ended. (Any truncation can be.)
    public static func staleSaveTakesWrite(at offset: Int, writtenEnd: Int) -> Bool {
        offset == 0 || offset == writtenEnd
    }

    /// True when `copy` is an earlier state of the save whose text is now
    /// `writer` (what it had written so far, a prefix when rewritten from the
    /// start), or when every line of it is kept in `text`: dropping or
    /// replacing it then loses nothing.
    static func isEarlierState(_ copy: Data, of writer: Data, keptIn text: Data? = nil) -> Bool {
        writer.starts(with: copy) || TextMerge.containsEveryLine(of: copy, in: text ?? writer)
    }
}
