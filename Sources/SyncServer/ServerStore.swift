import Foundation
import NotesModel
import SyncProtocol

/// Where the server keeps accounts, tokens, entities and answered change ids.
///
/// Every table is keyed by account first. Implementations keep SQL and locking
/// to themselves; the rules they share (compare-and-swap, idempotency, folder
/// cycles) live in `PushProcessor`, which runs inside `push` against the
/// `PushTransaction` primitives. The contract suite in `SyncServerTests` runs
/// against any implementation through a factory.
///
/// Durability: `push` and every account change return only after their commit
/// survives power loss.
public protocol ServerStore: Sendable {
    /// The store's epoch: a random text made when the store was created and
    /// replaced by `newEpoch()`. Cursors carry it.
    func epoch() async throws -> String

    /// Replaces the epoch, so every client cursor answers `410` and clients
    /// resync, and moves every account's counter past every version the lost
    /// history can have issued (see `ServerEpoch.counterFloor`), so none is
    /// issued again. Run after restoring the store from a backup.
    func newEpoch(now: Date) async throws -> String

    /// A random secret made the first time the store was opened and kept
    /// with its data (a restored backup keeps it; another installation has
    /// its own). `AccountKey` derives the account keys clients bind to from it.
    func installationSecret() async throws -> String

    /// The sum of every account's counter. It only grows while the store
    /// keeps its history, so `CounterMark` can tell a store put back from an
    /// older copy.
    func counterTotal() async throws -> Int64

    /// The token with this public id, if any.
    func token(id: String) async throws -> TokenRecord?

    /// `token(id:)` for a caller outside any task (libmicrohttpd's thread):
    /// `completion` runs once, on any thread. By default it runs in a task;
    /// a store with its own read threads answers from there, which spares
    /// the hand-offs to and from the task pool.
    func token(id: String, completion: @escaping @Sendable (Result<TokenRecord?, any Error>) -> Void)

    /// Runs `body` in one write transaction for `account` and returns its
    /// result once the commit is durable. Throwing from `body` rolls back
    /// everything it did. Implementations may commit several concurrent
    /// bodies together (group commit); each still succeeds or fails alone.
    func push<Result: Sendable>(
        account: AccountID, _ body: @escaping @Sendable (any PushTransaction) throws -> Result
    ) async throws -> Result

    /// `push`, also telling the other processes sharing the store, with
    /// their wake-up, which new versions are the pushing device's own
    /// (`ownChanges` reads them from the body's result). A store used by one
    /// process only ignores it.
    func push<Result: Sendable>(
        account: AccountID, ownChanges: @escaping @Sendable (Result) -> OwnChanges?,
        _ body: @escaping @Sendable (any PushTransaction) throws -> Result
    ) async throws -> Result

    /// Entities of `account` whose version is above `after`, oldest first: at
    /// most `rowsMax` rows and about `bytesMax` bytes, at least one row when
    /// there is any. Read in one snapshot together with the head.
    func changes(account: AccountID, after: Int64, rowsMax: Int, bytesMax: Int) async throws -> FeedRead

    /// The account's counter and retention mark.
    func head(account: AccountID) async throws -> FeedHead

    /// Live entities ordered by (kind, id), after `after` when given.
    func index(account: AccountID, after: EntityRef?, rowsMax: Int) async throws -> IndexRead

    /// The rows of `refs` (tombstones included), in the order asked, up to
    /// about `bytesMax` bytes (at least one).
    func entities(account: AccountID, refs: [EntityRef], bytesMax: Int) async throws -> FetchRead

    /// Makes an account; throws `accountExists` when the name is taken.
    func createAccount(name: String, at date: Date) async throws -> AccountID

    /// The account with this name, revoked or not.
    func account(named name: String) async throws -> AccountSummary?

    /// Stores a token (its public id and the hash of its secret) and clears
    /// the account's revocation.
    func addToken(account: AccountID, tokenID: String, secretHash: [UInt8], at date: Date) async throws

    /// Revokes every token of the named account. The account's notes are kept.
    func revokeAccount(name: String, at date: Date) async throws

    /// The tokens of the named account, oldest first, revoked ones included.
    func tokens(accountName: String) async throws -> [TokenSummary]

    /// Revokes one token of the named account; `noSuchToken` when the
    /// account has no token with that id.
    func revokeToken(accountName: String, tokenID: String, at date: Date) async throws

    /// Records that a request authenticated with the token at `date`.
    func recordTokenUse(tokenID: String, at date: Date) async throws

    /// Keeps `name` as the latest name of `device` in `account`, replacing
    /// the one before (docs/server.md "Device names"); durable when it returns.
    func recordDeviceName(account: AccountID, device: DeviceID, name: String, at date: Date) async throws

    /// The latest names of those of `devices` that ever told one in `account`.
    func deviceNames(account: AccountID, devices: Set<DeviceID>) async throws -> [DeviceID: String]

    /// Every account, by name.
    func accounts() async throws -> [AccountSummary]

    /// How many accounts exist (for metrics).
    func accountCount() async throws -> Int

    /// Removes tombstones and remembered change ids older than `date`, and
    /// raises each account's retention mark past the removed tombstones. The
    /// history of a removed tombstone goes with it, and the account's
    /// `keptSince` moves past the deletion.
    func purge(before date: Date) async throws -> PurgeReport

    // MARK: History (docs/server.md "History")

    /// The versions of `ref` the store keeps, newest first: the current row
    /// (tombstone or not) and the replaced versions in the history, those
    /// below `before` when it is given, at most `rowsMax`. Bodies are not read.
    func versions(account: AccountID, ref: EntityRef, before: Int64?, rowsMax: Int) async throws -> VersionsRead

    /// Version `version` of `ref` with its content; nil when it is not kept.
    func version(account: AccountID, ref: EntityRef, version: Int64) async throws -> VersionRecord?

    /// Looks at up to `rowsMax` entities after `after` in (kind, id) order and
    /// returns those live at `at`, each at the version it had then (the newest
    /// made at or before `at` and replaced after it), with their content
    /// (note bodies only when `bodies`), up to about `bytesMax` bytes (at
    /// least one). Read in one snapshot.
    func tree(account: AccountID, at: Date, after: EntityRef?, rowsMax: Int, bytesMax: Int, bodies: Bool)
        async throws -> TreeRead

    /// The accounts whose history holds any version.
    func historyAccounts() async throws -> [AccountID]

    /// One trimming step for one account, removing at most `versionsMax`
    /// versions in short transactions (the budget is weighed outside them):
    /// first those replaced before `replacedBefore`, then, while the history
    /// is over `budget`, the oldest replaced others, except the text each
    /// deleted note had when it was deleted. Moves the account's `keptSince`
    /// past what it removed. `done` is false when another step should run.
    func trimHistory(account: AccountID, replacedBefore: Date, budget: HistoryBudget, versionsMax: Int) async throws
        -> HistoryTrimReport

    /// Finishes queued work and closes the store; later calls fail with `unavailable`.
    func close() async
}

extension ServerStore {
    public func token(id: String, completion: @escaping @Sendable (Result<TokenRecord?, any Error>) -> Void) {
        Task {
            do {
                completion(.success(try await token(id: id)))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// For a store no other process shares: the plain `push`, nobody to tell.
    public func push<Result: Sendable>(
        account: AccountID, ownChanges: @escaping @Sendable (Result) -> OwnChanges?,
        _ body: @escaping @Sendable (any PushTransaction) throws -> Result
    ) async throws -> Result {
        try await push(account: account, body)
    }
}
