import Foundation
import NotesModel

/// The store as the mount sees it: folders, notes and local-only files with
/// their inodes and attributes, the kernel's views of a note's text, and the
/// status, conflict, history, trash and moment views `.notesfs` shows. Each
/// call is one transaction on the store's serial queue, made from the calling
/// thread (a FUSE worker) with no hop. Nothing here sends, settles or pulls:
/// that is `SyncReplica`'s.
public struct NotesTree: Sendable {
    /// The shared database core. Internal: outside this module a face is the
    /// only way in, and this one has no sync bookkeeping.
    let store: NotesStore

    init(_ store: NotesStore) { self.store = store }
}

extension NotesTree {
    /// The database file's path.
    public var path: String { store.path }

    /// Calls `observer` after every commit that changed something, on the
    /// committing thread, outside the database lock. Keep it short: queue work.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreCommit) -> Void) -> Int {
        store.addObserver(observer)
    }

    /// Stops calling the observer `addObserver` answered `id` for.
    public func removeObserver(_ id: Int) {
        store.removeObserver(id)
    }

    /// The entry named `name` in `directory`, or nil.
    public func lookup(in directory: DirectoryRef, name: String) throws(StoreError) -> Entry? {
        try store.lookup(in: directory, name: name)
    }

    /// The live entry for `ref`, or nil when it no longer exists.
    public func entry(for ref: EntryRef) throws(StoreError) -> Entry? {
        try store.entry(for: ref)
    }

    /// Entries of `directory` with cookies greater than `afterCookie`, in cookie order.
    public func list(
        directory: DirectoryRef, afterCookie: Int64 = 0, limit: Int = 1_000
    ) throws(StoreError) -> [Entry] {
        try store.list(directory: directory, afterCookie: afterCookie, limit: limit)
    }

    /// Up to `count` bytes of a note or local file from `offset`. `view` is
    /// the `kernelViewGeneration` read before the kernel last learned the
    /// file's size (nil when the reader is not the kernel): a read through a
    /// view that a pull has since made stale is served from the text that view
    /// saw, the text whose size the kernel still holds (see `KernelViewLedger`).
    public func read(_ ref: EntryRef, offset: Int64, count: Int, view: UInt64? = nil) throws(StoreError) -> Data {
        try store.read(ref, offset: offset, count: count, view: view)
    }

    /// The target of a local-only symbolic link.
    public func readLink(_ ref: EntryRef) throws(StoreError) -> String {
        try store.readLink(ref)
    }

    /// The entity an entry stands for (nil for the root and local-only
    /// entries), its state and server version, for `user.notesfs.*` attributes.
    public func syncInfo(for ref: EntryRef) throws(StoreError) -> (entity: EntityRef?, state: SyncState, version: Int64?) {
        try store.syncInfo(for: ref)
    }

    /// The inode number of `ref`, made from the counter the first time it is asked for.
    public func inode(for ref: EntryRef) throws(StoreError) -> UInt64 {
        try store.inode(for: ref)
    }

    /// The entry an inode number stands for, or nil when it was replaced or deleted.
    public func entryRef(forInode inode: UInt64) throws(StoreError) -> EntryRef? {
        try store.entryRef(forInode: inode)
    }

    /// The inode numbers of many entries at once (a directory listing), made
    /// from the counter where missing, in at most one read and one write
    /// transaction.
    public func inodes(for refs: [EntryRef]) throws(StoreError) -> [EntryRef: UInt64] {
        try store.inodes(for: refs)
    }

    /// Creates an empty file. Local-only names become local entries; a path
    /// whose note was deleted during this session revives that note.
    public func createFile(
        in directory: DirectoryRef, name: String, mode: UInt32 = 0o644, exclusive: Bool = true
    ) throws(StoreError) -> Entry {
        try store.createFile(in: directory, name: name, mode: mode, exclusive: exclusive)
    }

    /// `createFile` and the new entry's inode number in one transaction (the
    /// mount's `create`: one commit per created file, not one for the file and
    /// another for its number).
    public func createFileNumbered(
        in directory: DirectoryRef, name: String, mode: UInt32 = 0o644, exclusive: Bool = true
    ) throws(StoreError) -> (entry: Entry, inode: UInt64) {
        try store.createFileNumbered(in: directory, name: name, mode: mode, exclusive: exclusive)
    }

    /// Creates a directory: a synced folder, or a local-only one for local-only names.
    public func makeDirectory(
        in directory: DirectoryRef, name: String, mode: UInt32 = 0o755
    ) throws(StoreError) -> Entry {
        try store.makeDirectory(in: directory, name: name, mode: mode)
    }

    /// Creates a symbolic link; allowed only for local-only names (emacs lock files).
    public func makeSymlink(in directory: DirectoryRef, name: String, target: String) throws(StoreError) -> Entry {
        try store.makeSymlink(in: directory, name: name, target: target)
    }

    /// Writes `bytes` at `offset` (past the end zero-fills the gap). Returns the new size.
    @discardableResult
    public func write(_ ref: EntryRef, offset: Int64, bytes: Data) throws(StoreError) -> Int64 {
        try store.write(ref, offset: offset, bytes: bytes)
    }

    /// A write as the kernel sends it. `append` (the descriptor has
    /// `O_APPEND`) puts the bytes at the note's current end, whatever offset
    /// the kernel computed from the size it cached. `view` is the
    /// `kernelViewGeneration` read before the kernel last learned the note's
    /// size: a write through an older view is merged with the text it did not
    /// see (see `KernelViewLedger`), never written over it.
    public func write(
        _ ref: EntryRef, offset: Int64, bytes: Data, append: Bool, view: UInt64?
    ) throws(StoreError) -> KernelWriteResult {
        try store.write(ref, offset: offset, bytes: bytes, append: append, view: view)
    }

    /// Sets a file's size, cutting or zero-extending. Cut text goes to the history.
    public func truncate(_ ref: EntryRef, to size: Int64) throws(StoreError) {
        try store.truncate(ref, to: size)
    }

    /// A truncation as the kernel sends it; `view` as for `write(_:offset:bytes:append:view:)`.
    /// Returns true when the stored text differs from what the kernel believes.
    public func truncate(_ ref: EntryRef, to size: Int64, view: UInt64?) throws(StoreError) -> Bool {
        try store.truncate(ref, to: size, view: view)
    }

    /// The view generation to hand back with writes, read before the kernel is
    /// told a note's size.
    public var kernelViewGeneration: UInt64 { store.kernelViewGeneration }

    /// Sets permission bits (kept locally; never synced).
    public func setMode(_ ref: EntryRef, mode: UInt32) throws(StoreError) {
        try store.setMode(ref, mode: mode)
    }

    /// `utimensat`: sets the atime, the mtime or both (nil leaves one alone);
    /// the ctime moves to now either way.
    public func setTimes(_ ref: EntryRef, accessed: Int64?, modified: Int64?) throws(StoreError) {
        try store.setTimes(ref, accessed: accessed, modified: modified)
    }

    /// A change of status that alters no stored attribute (a `chown` to the
    /// owner it already has): only the ctime moves.
    public func touchStatus(_ ref: EntryRef) throws(StoreError) {
        try store.touchStatus(ref)
    }

    /// Renames or moves `name` in `from` to `newName` in `to`.
    /// With `noReplace`, an existing target is an error (`RENAME_NOREPLACE`).
    /// `targetView` is the kernel view a note at the target was last read
    /// through: a rename over it through a stale view is merged, not a plain
    /// replacement (see `NotesStore.replaceText`).
    public func rename(
        from: DirectoryRef, name: String, to: DirectoryRef, newName: String, noReplace: Bool = false,
        targetView: UInt64? = nil
    ) throws(StoreError) -> RenameOutcome {
        try store.rename(from: from, name: name, to: to, newName: newName, noReplace: noReplace, targetView: targetView)
    }

    /// Removes a file: a note becomes a tombstone (or vanishes if never sent).
    public func removeFile(in directory: DirectoryRef, name: String) throws(StoreError) {
        try store.removeFile(in: directory, name: name)
    }

    /// Removes an empty directory; a folder becomes a tombstone.
    public func removeDirectory(in directory: DirectoryRef, name: String) throws(StoreError) {
        try store.removeDirectory(in: directory, name: name)
    }

    /// Makes everything committed so far survive power loss: one commit with
    /// `synchronous=FULL`, which syncs the WAL (used by `fsync()`).
    public func durableSync() throws(StoreError) {
        try store.durableSync()
    }

    /// `durableSync()` for one file: a local file's backing file (and its
    /// directory entry) first, then the log holding its row.
    public func durableSync(of ref: EntryRef, dataOnly: Bool) throws(StoreError) {
        try store.durableSync(of: ref, dataOnly: dataOnly)
    }

    /// A snapshot of counts, pending work and the last sync outcome.
    public func status() throws(StoreError) -> StoreStatus {
        try store.status()
    }

    /// Every live conflict copy with its note, in the order they were made.
    public func conflictCopies() throws(StoreError) -> [ConflictCopyInfo] {
        try store.conflictCopies()
    }

    /// A number that changes whenever another connection (another process,
    /// such as `notesfs restore`) committed to the database.
    public func externalChangeCounter() throws(StoreError) -> Int64 {
        try store.externalChangeCounter()
    }

    /// Up to `limit` history entries with a seq above `afterSeq`, oldest
    /// first: one page of a listing, read from the listing index alone.
    public func historyPage(afterSeq: Int64, limit: Int) throws(StoreError) -> [HistoryEntry] {
        try store.historyPage(afterSeq: afterSeq, limit: limit)
    }

    /// The history entry `seq`, or nil when it is gone (restored entries stay; pruned ones go).
    public func historyEntry(_ seq: Int64) throws(StoreError) -> HistoryEntry? {
        try store.historyEntry(seq)
    }

    /// The history entry shown under `name` (in `.notesfs/history` and by
    /// `notesfs restore`), or nil when no entry has that name now.
    public func historyEntry(named name: String) throws(StoreError) -> HistoryEntry? {
        try store.historyEntry(named: name)
    }

    /// The bytes a history entry kept.
    public func historyBody(_ seq: Int64) throws(StoreError) -> Data {
        try store.historyBody(seq)
    }

    /// The trash: its notes, their last text, and bringing them back.
    public var trash: NotesTrash { NotesTrash(store) }

    /// Every synced note and folder this machine has, deleted ones too, and
    /// the local history's entries, without any text (one read transaction).
    public func momentRecords() throws(StoreError) -> MomentRecords {
        try store.momentRecords()
    }

    /// The text `body` stands for; a note this machine no longer has reads as
    /// `StoreError.notFound`.
    public func momentText(_ body: MomentBody) throws(StoreError) -> Data {
        try store.momentText(body)
    }
}
