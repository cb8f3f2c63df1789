import Foundation
import NotesModel

/// What the command-line program does with a store beyond mounting and
/// syncing it: status, search, import, restore, revert, conflicts, emptying
/// the trash, the server binding and the mass-delete answers, the device
/// name, and the start and end of a mount session. Each call is one
/// synchronous transaction on the store's serial queue.
public struct StoreAdmin: Sendable {
    /// The shared database core.
    let store: NotesStore

    init(_ store: NotesStore) { self.store = store }
}

extension StoreAdmin {
    /// The database file's path.
    public var path: String { store.path }

    /// Where local-only files' bytes are kept (`<database>-local`).
    public var localFilesPath: String { store.localFilesPath }

    /// This machine's device id and name.
    public func device() throws(StoreError) -> (id: DeviceID, name: String) {
        try store.device()
    }

    /// Sets the name this machine shows in conflict copies.
    public func setDeviceName(_ name: String) throws(StoreError) {
        try store.setDeviceName(name)
    }

    /// Starts a mount session: paths tombstoned in earlier sessions can no
    /// longer be revived, and local tombstones (notes deleted before any
    /// change of them was sent) go, unless they are in the trash.
    @discardableResult
    public func beginSession() throws(StoreError) -> Int64 {
        try store.beginSession()
    }

    /// At unmount: moves every commit from the write-ahead log into the
    /// database file and empties the log, so `notes.sqlite` alone holds
    /// everything (a backup that copies only that file misses nothing).
    /// Returns false when another process was reading and part of the log
    /// stays (still safe: SQLite replays it at the next open).
    public func checkpointForShutdown() throws(StoreError) -> Bool {
        try store.checkpointForShutdown()
    }

    /// At mount: gives the write-ahead log its full size up front (zeros up to
    /// the checkpoint size, synced), since unmount empties it. Until a log
    /// reaches that size every commit grows the file, and each `fsync()` then
    /// also writes the file's size: ~240 against ~135 µs per sync, measured
    /// here. Skipped (returning 0) when the disk has little room to spare.
    /// Returns the bytes added.
    public func prepareWriteAheadLog() throws(StoreError) -> Int64 {
        try store.prepareWriteAheadLog()
    }

    /// Runs SQLite's integrity check; `["ok"]` means healthy.
    public func integrityCheck() throws(StoreError) -> [String] {
        try store.integrityCheck()
    }

    /// A snapshot of counts, pending work and the last sync outcome.
    public func status() throws(StoreError) -> StoreStatus {
        try store.status()
    }

    /// The sync bookkeeping row.
    public func syncState() throws(StoreError) -> SyncStateSnapshot {
        try store.syncState()
    }

    /// Records the server this store syncs with (a new URL of the same
    /// server keeps everything). Which account it syncs as is settled at the
    /// first contact (`confirmAccount`), so a mount never needs the network.
    public func bindServer(url: String) throws(StoreError) {
        try store.bindServer(url: url)
    }

    /// Binds this store to another server and account, keeping every note and
    /// folder with its id and text: the cursor and every server version and
    /// base are forgotten, and every live note and folder is queued as a
    /// create (null base). Where the new server already holds the same id,
    /// the push meets a conflict and merges as usual, so nothing is doubled.
    /// Local tombstones have nothing to tell the new server and are settled.
    /// The store is bound to the token `tokenID` with no account yet: the
    /// first answer to that token names the account (`confirmAccount`).
    @discardableResult
    public func rebindServer(url: String, tokenID: String?) throws(StoreError) -> RebindReport {
        try store.rebindServer(url: url, tokenID: tokenID)
    }

    /// The account this store is bound to.
    public func accountBinding() throws(StoreError) -> AccountBinding {
        try store.accountBinding()
    }

    /// What the guard holds now, in each direction.
    public func massDeleteHold() throws(StoreError) -> MassDeleteHold {
        try store.massDeleteHold()
    }

    /// `notesfs sync --allow-mass-delete`: the held pulled deletions are
    /// applied now, the held local ones may be sent, and the window starts
    /// again (what was confirmed never counts again).
    @discardableResult
    public func confirmMassDelete() throws(StoreError) -> MassDeleteRelease {
        try store.confirmMassDelete()
    }

    /// `notesfs sync --restore-held`: cancels the held deletions. Notes and
    /// folders deleted here come back as edits on their last known version
    /// (so edits made elsewhere while the deletion was held, whose pulls the
    /// held row skipped, come back through a merge); those deleted elsewhere are pushed back
    /// as edits on the server's tombstone, so every machine gets them again.
    /// The window starts again.
    @discardableResult
    public func restoreHeldDeletions() throws(StoreError) -> MassDeleteRestore {
        try store.restoreHeldDeletions()
    }

    /// Brings the search index up to date with every committed note.
    public func flushSearchIndex() throws(StoreError) {
        try store.flushSearchIndex()
    }

    /// True when some notes changed since the index was last brought up to date.
    public func searchIndexIsStale() throws(StoreError) -> Bool {
        try store.searchIndexIsStale()
    }

    /// Notes matching `query` as typed (words, `word*` prefixes, `"quoted
    /// phrases"`; see `SearchQuery`), in `directory` and the folders inside it
    /// when given: notes whose title matches first, then the rest, best first.
    public func search(
        _ query: String, in directory: DirectoryRef? = nil, limit: Int = 50
    ) throws(StoreError) -> [SearchHit] {
        try store.search(query, in: directory, limit: limit)
    }

    /// Notes matching a parsed query (see `search(_:in:limit:)`).
    public func search(
        _ query: SearchQuery, in directory: DirectoryRef? = nil, limit: Int = 50
    ) throws(StoreError) -> [SearchHit] {
        try store.search(query, in: directory, limit: limit)
    }

    /// The entry's path from the mount root, or nil when it is not shown.
    public func path(of ref: EntryRef) throws(StoreError) -> String? {
        try store.path(of: ref)
    }

    /// The note at `path` in the mount (`/a/b.md`, or `a/b.md`), or nil.
    public func noteID(atPath path: String) throws(StoreError) -> NoteID? {
        try store.noteID(atPath: path)
    }

    /// A note's or local file's whole content.
    public func contents(of ref: EntryRef) throws(StoreError) -> Data {
        try store.contents(of: ref)
    }

    /// Every live conflict copy with its note, in the order they were made.
    public func conflictCopies() throws(StoreError) -> [ConflictCopyInfo] {
        try store.conflictCopies()
    }

    /// Settles conflict copy `copy`: keeps the note, the copy's text, or both
    /// (the copy's lines the note lacks added at its end), then deletes the
    /// copy. Returns the note. Fails when `copy` is not a live conflict copy,
    /// or when its note is gone and `keep` is not `.note` (rename the copy to keep it).
    @discardableResult
    public func resolveConflictCopy(_ copy: NoteID, keep: ConflictResolution) throws(StoreError) -> NoteID? {
        try store.resolveConflictCopy(copy, keep: keep)
    }

    /// History entries, newest first; for one note when `noteID` is given.
    public func history(for noteID: NoteID? = nil) throws(StoreError) -> [HistoryEntry] {
        try store.history(for: noteID)
    }

    /// The bytes and entries the history holds now (its running total).
    public func historyTotal() throws(StoreError) -> HistoryTotal {
        try store.historyTotal()
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

    /// Puts a history entry's bytes back into its note as an edit (the
    /// current bytes go to the history if the restore shrinks them). When the
    /// note is gone, it comes back as a new note in its own folder: the one it
    /// was deleted from, or else the folders of the path it had when the copy
    /// was kept, made again where they are gone.
    @discardableResult
    public func restore(historyEntry seq: Int64) throws(StoreError) -> NoteID {
        try store.restore(historyEntry: seq)
    }

    /// The trash: its notes, their last text, and bringing them back
    /// (`emptyTrash` is below: emptying it is the command's alone).
    public var trash: NotesTrash { NotesTrash(store) }

    /// Forgets every note the trash shows: nothing changes on the server or
    /// on other machines. Returns how many went.
    @discardableResult
    public func emptyTrash() throws(StoreError) -> Int {
        try store.emptyTrash()
    }

    /// What `revert(to:within:)` would do, without doing it.
    public func revertPlan(to past: [PastEntity], within paths: [String]) throws(StoreError) -> [RevertStep] {
        try store.revertPlan(to: past, within: paths)
    }

    /// Makes the notes and folders within `paths` (relative to the root;
    /// none: everything) as `past` says they were, in one transaction, and
    /// returns what changed.
    @discardableResult
    public func revert(to past: [PastEntity], within paths: [String]) throws(StoreError) -> [RevertStep] {
        try store.revert(to: past, within: paths)
    }

    /// Creates a note with content in one step (import, tests, the simulation).
    @discardableResult
    public func createNote(
        in directory: DirectoryRef, title: String, body: Data, modifiedNanoseconds: Int64? = nil
    ) throws(StoreError) -> NoteID {
        try store.createNote(in: directory, title: title, body: body, modifiedNanoseconds: modifiedNanoseconds)
    }

    /// Replaces a note's whole body as one edit (import, restore, the simulation).
    public func replaceBody(of id: NoteID, with body: Data) throws(StoreError) {
        try store.replaceBody(of: id, with: body)
    }

    /// Creates a folder path like `a/b/c` under the root, reusing existing folders (import).
    public func makeFolders(path components: [String]) throws(StoreError) -> DirectoryRef {
        try store.makeFolders(path: components)
    }

    /// Sets the modification time (kept as the note's local `updated_at`, never synced).
    public func setModified(_ ref: EntryRef, nanoseconds: Int64) throws(StoreError) {
        try store.setModified(ref, nanoseconds: nanoseconds)
    }
}
