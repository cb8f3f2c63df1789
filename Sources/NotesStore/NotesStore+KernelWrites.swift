import Foundation
import NotesModel
import SQLiteKit

// Writes and truncations as the kernel sends them: small notes are rewritten
// whole, large ones in the chunks a write touches; either way one
// transaction with the outbox row, committed before the call returns.
extension NotesStore {
    /// Writes `bytes` at `offset` (past the end zero-fills the gap). Returns the new size.
    @discardableResult
    func write(_ ref: EntryRef, offset: Int64, bytes: Data) throws(StoreError) -> Int64 {
        try write(ref, offset: offset, bytes: bytes, append: false, view: nil).size
    }

    /// A write as the kernel sends it. `append` (the descriptor has
    /// `O_APPEND`) puts the bytes at the note's current end, whatever offset
    /// the kernel computed from the size it cached. `view` is the
    /// `kernelViewGeneration` read before the kernel last learned the note's
    /// size: a write through an older view is merged with the text it did not
    /// see (see `KernelViewLedger`), never written over it.
    func write(_ ref: EntryRef, offset: Int64, bytes: Data, append: Bool, view: UInt64?)
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
                // One read of the row serves both paths: its body comes along
                // only when it is small and whole (a large one is not read for
                // a chunked write), and the whole row only when it is not chunked.
                guard
                    let target = try KernelWriteTarget.load(
                        db, id: id, bodyUpTo: Int64(configuration.chunkedBodyThresholdBytes)),
                    !target.deleted
                else { throw StoreError.notFound(ref.description) }
                if let result = try writeInChunks(
                    db, id: id, target: target, offset: offset, bytes: bytes, append: append, view: view,
                    commit: &commit)
                {
                    return result
                }
                guard let row = try target.wholeRow ?? NoteRow.load(db, id: id) else {
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
                    db, row, view: view, edit: .write(offset: Int(offset), bytes: bytes), commit: &commit)
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

    /// A kernel write into a large note, stored in the chunks it touches (a
    /// note crossing `chunkedBodyThresholdBytes` is split into chunks first).
    /// Nil when the write takes the whole-body path: a small note or a write
    /// through a stale view, which is merged.
    private func writeInChunks(
        _ db: Connection, id: NoteID, target: KernelWriteTarget, offset: Int64, bytes: Data, append: Bool,
        view: UInt64?, commit: inout StoreCommit
    ) throws -> KernelWriteResult? {
        let extent = target.extent
        let at = append ? extent.size : offset
        let end = at + Int64(bytes.count)
        guard extent.chunkBytes > 0 || end > Int64(configuration.chunkedBodyThresholdBytes) else { return nil }
        guard kernelWriteAppliesAsItIs(id, view: view) else { return nil }
        guard end <= Int64(configuration.noteSizeLimitBytes) else {
            throw StoreError.tooLarge(limit: configuration.noteSizeLimitBytes)
        }
        if !target.listedForSearch { try NoteChunks.markForSearch(db, seq: extent.seq) }
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
            db, seq: extent.seq, chunkBytes: chunkBytes, size: extent.size, offset: at, bytes: bytes,
            spareLimit: Int64(configuration.noteSizeLimitBytes))
        try noteChunkedEdit(db, id: id, extent: extent, newSize: newSize, queued: target.queued, commit: &commit)
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
    /// `queued` is the note's pending outbox operation when the caller has
    /// just read it in this transaction (`.some(nil)`: none is pending).
    private func noteChunkedEdit(
        _ db: Connection, id: NoteID, extent: NoteExtent, newSize: Int64, queued: ChangeOperation?? = nil,
        commit: inout StoreCommit
    ) throws {
        try db.run(Self.chunkedEditSQL, newSize, now, newSize, extent.seq)
        if let queued {
            try enqueue(db, .note(id), .put, queued: queued, commit: &commit)
        } else {
            try enqueue(db, .note(id), .put, commit: &commit)
        }
        commit.changedEntries.insert(.note(id))
        if extent.synced { commit.touchedSyncedNote = true }
    }

    /// `noteChunkedEdit`'s statement, built once: a write into a large note
    /// runs it thousands of times.
    private static let chunkedEditSQL = """
        UPDATE notes SET body_size = ?, updated_ns = ?, local_rev = local_rev + 1,
            \(releaseOversizeHoldSQL) WHERE seq = ?
        """

    static func splice(_ body: Data, _ bytes: Data, at offset: Int) -> Data {
        var result = body
        if offset > result.count { result.append(Data(count: offset - result.count)) }
        let end = offset + bytes.count
        if end > result.count { result.append(Data(count: end - result.count)) }
        result.replaceSubrange(result.startIndex + offset..<result.startIndex + end, with: bytes)
        return result
    }

    /// Sets a file's size, cutting or zero-extending. Cut text goes to the history.
    func truncate(_ ref: EntryRef, to size: Int64) throws(StoreError) {
        _ = try truncate(ref, to: size, view: nil)
    }

    /// A truncation as the kernel sends it; `view` as for `write(_:offset:bytes:append:view:)`.
    /// Returns true when the stored text differs from what the kernel believes.
    func truncate(_ ref: EntryRef, to size: Int64, view: UInt64?) throws(StoreError) -> Bool {
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
                    db, row, view: view, edit: .truncation(size: Int(size)), commit: &commit) != nil
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
}
