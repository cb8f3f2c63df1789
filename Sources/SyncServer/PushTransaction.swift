import NotesModel
import SyncProtocol

/// The primitives `PushProcessor` needs inside one push's transaction, in the
/// lock order of DESIGN.md: the account row first (`lockAccount`), then the
/// idempotency lookup, then entities in (kind, id) order (`lockEntities`).
/// A transaction object is used on one thread and never escapes its body.
public protocol PushTransaction {
    /// The account this transaction writes.
    var account: AccountID { get }
    /// Takes the account row's write lock until commit and returns its counter.
    func lockAccount() throws -> Int64
    /// The remembered answers for those change ids that have one.
    func idempotencyRecords(_ changeIds: [ChangeID]) throws -> [ChangeID: IdempotencyRecord]
    /// Locks the rows of `refs`, which the caller passes sorted, and returns
    /// those that exist (tombstones included).
    func lockEntities(_ refs: [EntityRef]) throws -> [EntityRef: StoredEntity]
    /// Reads one row (for walking folder parents); the account lock covers it.
    func entity(_ ref: EntityRef) throws -> StoredEntity?
    /// Inserts or replaces the row of `entity.ref`. `previous` is the row it
    /// replaces (nil for a new entity): the store moves it into the history
    /// in the same transaction, as replaced at `entity.updatedAt`.
    func write(_ entity: StoredEntity, replacing previous: StoredEntity?) throws
    /// Remembers the first answer to a change id.
    func remember(_ record: IdempotencyRecord) throws
    /// Stores the account's new counter.
    func setCounter(_ counter: Int64) throws
}
