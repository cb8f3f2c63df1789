import Foundation
import NotesModel

/// The store as the sync engine sees it: the outbox (freeze, settle, resend),
/// pulled pages and the resync after `410`, the cursor and account binding,
/// the mass-delete guard, and the trash filled from the server's history.
/// It has no file operations: renames, unlinks and writes are `NotesTree`'s.
///
/// The entry points are `async` and `nonisolated(nonsending)`: each runs the
/// store's synchronous transaction on the caller's executor, with no hop.
/// The engine's actor runs on a serial queue of its own (`EngineExecutor`),
/// so a wait for SQLite or `fsync` there never holds a thread of Swift's
/// cooperative pool.
public struct SyncReplica: Sendable {
    /// The shared database core. Internal: outside this module a face is the
    /// only way in, and this one has no file operations.
    let store: NotesStore

    init(_ store: NotesStore) { self.store = store }
}

extension SyncReplica {
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

    /// This machine's device id and name.
    public func device() throws(StoreError) -> (id: DeviceID, name: String) {
        try store.device()
    }

    /// The sync bookkeeping row.
    nonisolated(nonsending) public func syncState() async throws(StoreError) -> SyncStateSnapshot {
        try store.syncState()
    }

    /// Keeps the server's history period (`ChangesPage.historySeconds`; nil:
    /// the server did not say): the trash keeps notes as long.
    nonisolated(nonsending) public func rememberServerHistory(seconds: Int64?) async throws(StoreError) {
        try store.rememberServerHistory(seconds: seconds)
    }

    /// Records the end of a sync run.
    nonisolated(nonsending) public func recordSyncRun(succeeded: Bool, error: String?) async throws(StoreError) {
        try store.recordSyncRun(succeeded: succeeded, error: error)
    }

    /// The account this store is bound to.
    nonisolated(nonsending) public func accountBinding() async throws(StoreError) -> AccountBinding {
        try store.accountBinding()
    }

    /// Checks a server's answer against the binding (`AccountBinding.check`)
    /// and keeps the binding it confirms, in one transaction: the first
    /// answer binds a new store, a `token:` binding from before gets its
    /// key, a second token of the account becomes the confirming one.
    /// Throws `syncMismatch` with the reason and the way out, changing nothing.
    @discardableResult
    nonisolated(nonsending) public func confirmAccount(
        serverAccount: String?, tokenID: String?
    ) async throws(StoreError) -> AccountBinding {
        try store.confirmAccount(serverAccount: serverAccount, tokenID: tokenID)
    }

    /// Changes to send now, oldest first, parents before children: every
    /// in-flight row (resent unchanged), then pending rows frozen now — at most
    /// one in flight per entity, packed up to `maxCount` changes and `maxBytes`
    /// of payload (a single larger change travels alone). Tombstones of notes
    /// and folders held by the mass-delete guard, and notes held back for
    /// size (NotesStore+SizeCap.swift), are left pending.
    nonisolated(nonsending) public func freezeBatch(
        maxCount: Int = 100, maxBytes: Int = 4 << 20
    ) async throws(StoreError) -> [OutgoingChange] {
        try store.freezeBatch(maxCount: maxCount, maxBytes: maxBytes)
    }

    /// Whether a sent change still waits for its answer (a frozen row).
    nonisolated(nonsending) public func hasChangesInFlight() async throws(StoreError) -> Bool {
        try store.hasChangesInFlight()
    }

    /// Records a failed send of an in-flight change (it stays frozen).
    nonisolated(nonsending) public func recordSendFailure(
        _ changeIDs: [ChangeID], error: String
    ) async throws(StoreError) {
        try store.recordSendFailure(changeIDs, error: error)
    }

    /// Gives an in-flight change a new change id (after the server said the id
    /// was reused with another payload). The payload stays frozen.
    nonisolated(nonsending) public func renewChangeID(_ changeID: ChangeID) async throws(StoreError) -> ChangeID {
        try store.renewChangeID(changeID)
    }

    /// Settles the server's answer for one frozen change, in one transaction.
    /// An answer for a change that is no longer in flight (a duplicate reply) changes nothing.
    @discardableResult
    nonisolated(nonsending) public func settle(
        _ changeID: ChangeID, outcome: ChangeOutcome
    ) async throws(StoreError) -> SettleReport {
        try store.settle(changeID, outcome: outcome)
    }

    /// Settles the answers to one push, in order, in one transaction: each
    /// exactly as `settle(_:outcome:)` would, for one commit instead of one per
    /// change (an initial upload settles thousands). With `cursor`, the sync
    /// cursor moves in the same transaction.
    @discardableResult
    nonisolated(nonsending) public func settle(
        _ answers: [(ChangeID, ChangeOutcome)], cursor: CursorAdvance? = nil
    ) async throws(StoreError) -> [SettleReport] {
        try store.settle(answers, cursor: cursor)
    }

    /// Applies one pulled page and its cursor in one transaction. A dirty local
    /// row is skipped (the next push meets the conflict and merges); our own
    /// echoes (version ≤ ours) are skipped. Deletions the mass-delete guard
    /// holds are kept aside (not applied) and the rest of the page applies,
    /// so the cursor moves on without losing them.
    @discardableResult
    nonisolated(nonsending) public func applyPulled(
        _ entities: [RemoteEntity], cursor: String?
    ) async throws(StoreError) -> PullReport {
        try store.applyPulled(entities, cursor: cursor)
    }

    /// Server versions this store knows, by entity, for working out which
    /// index entries differ.
    nonisolated(nonsending) public func knownServerVersions() async throws(StoreError) -> [IndexedVersion] {
        try store.knownServerVersions()
    }

    /// Applies a resync in one transaction. `index` lists every live entity on
    /// the server; `fetched` holds the rows whose version differs from ours
    /// (all of them when `epochChanged`) and the server's tombstones of rows
    /// we hold that the index lacks. Only such a tombstone deletes a local
    /// row: a row the server merely lacks (a tombstone that expired, or a
    /// server restored from an older copy) is kept and queued as a create,
    /// with its id and text. `epochChanged` means the server's history is not
    /// the one our versions came from (a new epoch, or signs that it went back
    /// in time): local rows are rebased instead of overwritten. No pending
    /// change is lost.
    @discardableResult
    nonisolated(nonsending) public func applyResync(
        index: [IndexedVersion], fetched: [RemoteEntity], epochChanged: Bool, cursor: String
    ) async throws(StoreError) -> ResyncReport {
        try store.applyResync(index: index, fetched: fetched, epochChanged: epochChanged, cursor: cursor)
    }

    /// Puts a note this machine never had, deleted elsewhere, into the trash
    /// with its last text from the server's history: a tombstone row on the
    /// server's deletion version (so a restore is a put on it, which revives
    /// the note everywhere) and a trash entry at the time it was deleted.
    /// False when the note is known here by now, or its deletion is older
    /// than the trash keeps.
    @discardableResult
    nonisolated(nonsending) public func trashFromServerHistory(
        _ id: NoteID, lastContent content: NoteContent, deletionVersion: Int64, deletedAtNanoseconds: Int64
    ) async throws(StoreError) -> Bool {
        try store.trashFromServerHistory(
            id, lastContent: content, deletionVersion: deletionVersion, deletedAtNanoseconds: deletedAtNanoseconds
        )
    }

    /// What the guard holds now, in each direction.
    nonisolated(nonsending) public func massDeleteHold() async throws(StoreError) -> MassDeleteHold {
        try store.massDeleteHold()
    }

    /// A number that changes whenever another connection (another process,
    /// such as `notesfs restore`) committed to the database.
    nonisolated(nonsending) public func externalChangeCounter() async throws(StoreError) -> Int64 {
        try store.externalChangeCounter()
    }
}

// Synchronous answers for callers on threads of their own, not the engine:
// the status file's reader (a FUSE worker) and `notesfs sync
// --allow-mass-delete`/`--restore-held` (the control socket's thread). In an
// async context the `async` entry points above are chosen.
extension SyncReplica {
    /// The sync bookkeeping row, read at once on the calling thread.
    public func syncState() throws(StoreError) -> SyncStateSnapshot {
        try store.syncState()
    }

    /// Lets the held deletions go (`notesfs sync --allow-mass-delete`), on the calling thread.
    @discardableResult
    public func confirmMassDelete() throws(StoreError) -> MassDeleteRelease {
        try store.confirmMassDelete()
    }

    /// Cancels the held deletions (`notesfs sync --restore-held`), on the calling thread.
    @discardableResult
    public func restoreHeldDeletions() throws(StoreError) -> MassDeleteRestore {
        try store.restoreHeldDeletions()
    }
}
