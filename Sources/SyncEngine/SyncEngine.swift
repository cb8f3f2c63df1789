import Foundation
import NotesModel
import NotesStore
import SyncProtocol
import Synchronization

/// How one sync run ended.
public enum SyncRunOutcome: Sendable, Equatable {
    case succeeded
    case failed(TransportError)
    /// The store refused (another account, a damaged database, a full disk).
    case storeFailed(String)
    /// Everything else synced, but the mass-delete guard holds deletions
    /// until the user confirms or restores them; the text says how many and why.
    case held(String)
    /// Nothing was sent or received: the token's account is not the one this
    /// store syncs as (`AccountBinding`). Retrying cannot help until the
    /// user acts; the text says why and what to do.
    case blocked(String)

    public var succeeded: Bool { self == .succeeded }
}

/// The background actor that pushes local changes and pulls remote ones for
/// one store (DESIGN.md "Sync engine rules"). One run at a time: push first,
/// then pull; a request during a run means one more run.
public actor SyncEngine {
    /// Batch sizes and limits, matching the server's defaults.
    public struct Configuration: Sendable {
        public var pushBatchChangesMax = 100
        public var pushBatchBytesMax = 4 << 20
        public var pullPageRowsMax = 200
        public var indexPageRowsMax = 1_000
        public var fetchBatchMax = 200
        /// Bounds each loop inside a run, so a misbehaving server cannot spin it forever.
        public var roundsPerRunMax = 10_000
        public init() {}
    }

    let replica: SyncReplica
    let transport: any SyncTransport
    let configuration: Configuration
    let device: DeviceID
    /// The id of the transport's token, checked against the store's binding.
    let tokenID: String?

    private var currentRun: Task<SyncRunOutcome, Never>?
    private var requestedRuns = 0
    private var completedRuns = 0
    private var lastOutcome: SyncRunOutcome = .succeeded
    /// Read from any thread (status, `sync --wait` progress lines) without a hop onto the actor.
    private let progressValue = Mutex(SyncProgress())
    /// The last push left the cursor at the server's head (nothing else had
    /// happened since our cursor), so a pull right after it has nothing to get.
    private var lastPushReachedHead = false
    /// Whether this engine's token was checked against the store's binding.
    private var accountChecked = false
    /// Pulled deletions of notes this machine never had, whose last text the
    /// next run fetches from the server's history into the trash.
    private var unseenDeletions: [UnseenDeletion] = []
    /// The account it was found to sync as (`account:<key>`; nil from a
    /// server that names none).
    private var checkedAccount: String?
    /// The engine runs on a queue of its own, off the cooperative pool (`EngineExecutor`).
    private let executor = EngineExecutor(label: "notesfs.sync-engine")

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Whether the engine's code is running on its own queue right now (for tests).
    func runsOnItsOwnQueue() -> Bool { executor.isCurrent }

    /// `tokenID` is the id of the token the transport sends (nil: one token
    /// per store, as in tests and the simulation).
    public init(
        replica: SyncReplica, transport: any SyncTransport, configuration: Configuration = Configuration(),
        tokenID: String? = nil
    ) throws(StoreError) {
        self.replica = replica
        self.transport = transport
        self.configuration = configuration
        self.tokenID = tokenID
        self.device = try replica.device().id
    }

    /// Runs a sync (or joins the one running and then runs once more) and
    /// returns how the last run ended.
    @discardableResult
    public func sync() async -> SyncRunOutcome {
        requestedRuns += 1
        let ticket = requestedRuns
        while completedRuns < ticket {
            if let running = currentRun {
                _ = await running.value
                continue
            }
            let covers = requestedRuns
            // The run task does its own bookkeeping, so a caller waiting on it
            // never sees a finished run still marked current (and spins).
            let task = Task {
                let outcome = await self.performRun()
                self.lastOutcome = outcome
                self.currentRun = nil
                self.completedRuns = covers
                return outcome
            }
            currentRun = task
            _ = await task.value
        }
        return lastOutcome
    }

    /// What the current or last run has done, for progress lines and status.
    public nonisolated var progress: SyncProgress { progressValue.withLock { $0 } }

    private func performRun() async -> SyncRunOutcome {
        progressValue.withLock { $0 = SyncProgress(running: true) }
        defer { progressValue.withLock { $0.running = false } }
        let outcome: SyncRunOutcome
        do {
            do {
                lastPushReachedHead = false
                if !accountChecked { try await checkAccount() }
                try await pushAll()
                // A change committed after our push wakes the long poll, which
                // starts another run; this one need not ask.
                if !lastPushReachedHead { try await pullAll() }
            } catch TransportError.cursorGone {
                // A push meets 410 when the server was restored since our
                // cursor: its bases may be lost versions, so resync first.
                try await resync()
                try await pushAll()
                try await pullAll()
            }
            await fillTrashFromHistory()
            let hold = try await replica.massDeleteHold()
            outcome = hold.isHeld ? .held(hold.description) : .succeeded
        } catch let error as TransportError {
            outcome = .failed(error)
        } catch {
            if let error = error as? StoreError, case .syncMismatch(let reason) = error {
                outcome = .blocked(reason)
            } else {
                outcome = .storeFailed(String(describing: error))
            }
        }
        switch outcome {
        // A held run synced everything else; status shows the hold from the store.
        case .succeeded, .held: try? await replica.recordSyncRun(succeeded: true, error: nil)
        case .failed(let error): try? await replica.recordSyncRun(succeeded: false, error: error.description)
        case .storeFailed(let reason): try? await replica.recordSyncRun(succeeded: false, error: reason)
        case .blocked(let reason): try? await replica.recordSyncRun(succeeded: false, error: "sync is off: " + reason)
        }
        return outcome
    }

    // MARK: Account

    /// Settles, before anything is sent, whether this engine's token may
    /// sync this store (`AccountBinding.check`; a refusal blocks the run).
    /// The token that confirmed the store's binding may (a token belongs to
    /// one account for good), and so may the first token of a store never
    /// bound, which is recorded before its first push; the pages that follow
    /// name the account and fill in the binding. Any other token costs one
    /// small index request first, whose answer names its account.
    private func checkAccount() async throws {
        let binding = try await replica.accountBinding()
        let confirmedByThisToken =
            binding.tokenID == tokenID && (binding.account != nil || tokenID != nil)
        if confirmedByThisToken || binding.isEmpty {
            if binding.isEmpty, tokenID != nil {
                try await replica.confirmAccount(serverAccount: nil, tokenID: tokenID)
            }
            checkedAccount = binding.account
            accountChecked = true
            return
        }
        let page = try await transport.index(after: nil, limit: 1)
        try await noteAccount(page.account)
    }

    /// Checks the account a page names against the one checked (again
    /// through the store when it differs); throws `syncMismatch` to stop
    /// before the page is applied.
    private func noteAccount(_ key: String?) async throws {
        let named = key.map { "account:" + $0 }
        if accountChecked, named == nil || named == checkedAccount { return }
        accountChecked = false
        let binding = try await replica.confirmAccount(serverAccount: named, tokenID: tokenID)
        checkedAccount = binding.account
        accountChecked = true
    }

    // MARK: Push

    private func pushAll() async throws {
        for _ in 0..<configuration.roundsPerRunMax {
            let batch = try await replica.freezeBatch(
                maxCount: configuration.pushBatchChangesMax, maxBytes: configuration.pushBatchBytesMax)
            if batch.isEmpty { return }
            try await push(batch)
            progressValue.withLock { $0.pushed += batch.count }
        }
    }

    /// Sends one frozen batch and settles every answer. Only a `refused`
    /// result inside the reply refuses a change; every failure of the request
    /// fails the run, leaving the batch frozen for a retry with the same ids
    /// (docs/sync.md "When the server says no"). A batch turned down for
    /// what one change may hold (400, 413, a reused id) is sent again change
    /// by change, so the others still go out and only that one waits.
    private func push(_ batch: [OutgoingChange]) async throws {
        let cursor = try await replica.syncState().cursor
        let request = WireMapping.pushRequest(batch, device: device, cursor: cursor)
        let changes = request.changes
        do {
            let response = try await transport.push(request)
            guard response.results.count == changes.count,
                zip(response.results, changes).allSatisfy({ $0.changeId == $1.changeId })
            else {
                throw TransportError.serverBroke("push answered \(response.results.count) results for \(changes.count) changes")
            }
            let answers = try response.results.map { result throws(TransportError) in
                guard let outcome = WireMapping.outcome(result.outcome) else {
                    throw TransportError.serverBroke("unreadable result for change \(result.changeId)")
                }
                return (result.changeId, outcome)
            }
            // Only a token already allowed to push gets here, so this fills
            // in the key of a binding that had none (or of a restored server).
            try await noteAccount(response.account)
            try await replica.settle(answers, cursor: WireMapping.cursorAdvance(after: response, sentWith: cursor))
            lastPushReachedHead = response.nextCursor != nil
        } catch let error as TransportError {
            try? await replica.recordSendFailure(batch.map(\.changeID), error: error.description)
            if batch.count > 1 && error.splitsPush {
                try await pushOneByOne(batch)
                return
            }
            guard let only = batch.first, batch.count == 1 else { throw error }
            if case .changeIDReused = error {
                _ = try await replica.renewChangeID(only.changeID)
            } else if error.refusesLoneChange {
                // This server's own 413 for this change alone: no request
                // can carry it, ever. Keep the text locally, converge.
                if case .rejected(_, let code, let message) = error {
                    try await replica.settle(only.changeID, outcome: .refused(reason: "\(code): \(message)"))
                }
            } else {
                throw error
            }
        }
    }

    /// Sends each change of a split batch alone. A change turned down on its
    /// own (`rejected`) stays frozen and fails the run after the others went
    /// out; any other failure (the network, the server, the token) stops at once.
    private func pushOneByOne(_ batch: [OutgoingChange]) async throws {
        var heldBack: TransportError?
        for change in batch {
            do {
                try await push([change])
            } catch let error as TransportError {
                guard case .rejected = error else { throw error }
                heldBack = heldBack ?? error
            }
        }
        if let heldBack { throw heldBack }
    }

    // MARK: Pull

    private func pullAll() async throws {
        var cursor = try await replica.syncState().cursor.map(SyncCursor.init(rawValue:))
        for _ in 0..<configuration.roundsPerRunMax {
            let page = try await transport.changes(
                since: cursor, limit: configuration.pullPageRowsMax, waitSeconds: 0)
            if let known = cursor?.epoch, known != page.epoch { throw TransportError.cursorGone }
            try await noteAccount(page.account)
            try await apply(page)
            cursor = page.nextCursor
            if !page.hasMore { return }
        }
    }

    /// Applies one page and its cursor; the store's mass-delete guard keeps
    /// aside the deletions it holds.
    private func apply(_ page: ChangesPage) async throws {
        var entities: [RemoteEntity] = []
        for version in page.changes {
            guard let entity = WireMapping.remote(version) else {
                throw TransportError.serverBroke("unreadable row \(version.kind.rawValue) \(version.id)")
            }
            entities.append(entity)
        }
        let report = try await replica.applyPulled(entities, cursor: page.nextCursor.rawValue)
        try await replica.rememberServerHistory(seconds: page.historySeconds)
        progressValue.withLock { $0.pulled += entities.count }
        if !report.unseenDeletedNotes.isEmpty, transport is any HistoryTransport {
            unseenDeletions.append(contentsOf: report.unseenDeletedNotes.prefix(Self.unseenDeletionsMax - unseenDeletions.count))
        }
    }

    /// At most this many unseen deletions wait for their text at once; beyond
    /// that (a mass deletion elsewhere of notes never pulled here) the rest
    /// stay out of this machine's trash, in the server's history only.
    static let unseenDeletionsMax = 1_000

    /// Fetches the last text of notes deleted elsewhere before this machine
    /// ever had them, and puts them in the trash. Best effort: a failure
    /// leaves the rest for the next run, and the run's outcome is not touched.
    private func fillTrashFromHistory() async {
        guard !unseenDeletions.isEmpty, let history = transport as? any HistoryTransport else { return }
        while let deletion = unseenDeletions.first {
            do {
                let page = try await history.versions(of: .note(deletion.id), before: nil, limit: 20)
                let tombstone = page.versions.first { $0.version == deletion.version && $0.deleted }
                if let tombstone, let last = page.versions.first(where: { !$0.deleted && $0.version < deletion.version }),
                    let entity = try await history.version(of: .note(deletion.id), version: last.version),
                    let note = entity.note, let body = note.bodyBytes()
                {
                    try await replica.trashFromServerHistory(
                        deletion.id, lastContent: NoteContent(title: note.title, body: body, folderID: note.folderId),
                        deletionVersion: deletion.version,
                        deletedAtNanoseconds: Int64(tombstone.time.timeIntervalSince1970 * 1e9))
                }
                unseenDeletions.removeFirst()
            } catch {
                return
            }
        }
    }

    /// Applies a whole page the long poll brought, when no run is going on
    /// and the page starts exactly at the stored cursor: the run it would
    /// otherwise start would only pull the same rows again. False when it
    /// did not (the caller then starts a run, which also applies every guard).
    /// Never while a sent change waits for its answer: the page would move the
    /// cursor past versions skipped for that dirty row, and the retry's answer
    /// (the server's replay of an older version) would leave the row on that
    /// older version for good. A run pushes first, then pulls.
    public func applyPolled(_ page: ChangesPage, since cursor: SyncCursor) async -> Bool {
        guard currentRun == nil, !page.hasMore, !page.changes.isEmpty, page.epoch == cursor.epoch,
            accountChecked, page.account == nil || page.account.map({ "account:" + $0 }) == checkedAccount
        else {
            return false
        }
        do {
            let stillAtCursor = try await replica.syncState().cursor == cursor.rawValue
            guard stillAtCursor, try await !replica.hasChangesInFlight() else { return false }
            try await apply(page)
            return true
        } catch {
            return false
        }
    }

    // MARK: Resync after 410

    /// Lists the server's index, fetches what differs, and applies it in one
    /// step. Only a server tombstone deletes a local note: rows we hold as
    /// synced that the index lacks are fetched, and those the server has no
    /// tombstone for are pushed back as creates. A server whose history is
    /// not the one our versions came from — another epoch, or signs that it
    /// went back in time (a restore without a new epoch) — gets every local
    /// row rebased onto it instead.
    private func resync() async throws {
        var index: [IndexedVersion] = []
        var after: String?
        var snapshotCursor: SyncCursor?
        var epoch: String?
        for _ in 0..<configuration.roundsPerRunMax {
            let page = try await transport.index(after: after, limit: configuration.indexPageRowsMax)
            try await noteAccount(page.account)
            if snapshotCursor == nil {
                snapshotCursor = page.cursor
                epoch = page.epoch
            }
            index += page.entries.map { IndexedVersion($0.ref, version: $0.version) }
            after = page.nextAfter
            if !page.hasMore || after == nil { break }
        }
        guard let snapshotCursor else { throw TransportError.serverBroke("empty index answer") }
        let storedCursor = try await replica.syncState().cursor.map(SyncCursor.init(rawValue:))
        let storedEpoch = storedCursor?.epoch
        let held = try await replica.knownServerVersions()
        let known = Dictionary(held.map { ($0.ref, $0.version) }, uniquingKeysWith: { first, _ in first })
        let listed = Set(index.map(\.ref))
        let missing = held.filter { !listed.contains($0.ref) }
        // Usually tombstones; a row made since the index was read is taken as usual.
        let missingRows = try await fetchAll(missing)
        let epochChanged = storedEpoch != nil && storedEpoch != epoch
        let wentBack =
            !epochChanged
            && Self.serverWentBack(
                head: snapshotCursor.counter, storedCursor: storedCursor, known: known,
                seen: index.map { ($0.ref, $0.version) } + missingRows.map { ($0.ref, $0.version) })
        let rebase = epochChanged || wentBack
        let wanted = index.filter { rebase || known[$0.ref] != $0.version }
        let fetched = try await fetchAll(wanted) + missingRows
        try await replica.applyResync(
            index: index, fetched: fetched, epochChanged: rebase, cursor: snapshotCursor.rawValue)
    }

    /// Whether a server of the same epoch shows signs of having gone back in
    /// time (restored from an older copy without a new epoch): its head below
    /// our cursor or below a version we hold, or an entity at a version lower
    /// than the one we hold. Within one history none of these can happen.
    static func serverWentBack(
        head: Int64?, storedCursor: SyncCursor?, known: [EntityRef: Int64], seen: [(ref: EntityRef, version: Int64)]
    ) -> Bool {
        if let head {
            if let ours = storedCursor?.counter, ours > head { return true }
            if let highest = known.values.max(), highest > head { return true }
        }
        return seen.contains { entry in known[entry.ref].map { entry.version < $0 } ?? false }
    }

    private func fetchAll(_ wanted: [IndexedVersion]) async throws -> [RemoteEntity] {
        var remaining = wanted.map(\.ref)
        var fetched: [RemoteEntity] = []
        for _ in 0..<configuration.roundsPerRunMax where !remaining.isEmpty {
            let request = Array(remaining.prefix(configuration.fetchBatchMax))
            let response = try await transport.fetch(FetchRequest(entities: request))
            for version in response.entities {
                guard let entity = WireMapping.remote(version) else {
                    throw TransportError.serverBroke("unreadable row \(version.kind.rawValue) \(version.id)")
                }
                fetched.append(entity)
            }
            let answered = Set(response.entities.map(\.ref)).union(response.notFound)
            guard !answered.isEmpty else { throw TransportError.serverBroke("fetch answered nothing") }
            remaining = remaining.filter { !answered.contains($0) }
        }
        return fetched
    }
}

/// What a run has moved so far.
public struct SyncProgress: Sendable, Equatable {
    public var running = false
    public var pushed = 0
    public var pulled = 0
    public init(running: Bool = false) { self.running = running }
}
