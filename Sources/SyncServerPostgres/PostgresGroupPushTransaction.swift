import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// One push inside an optimistic group: reads see the database under the
/// group's locks plus what earlier pushes of the group wrote (the overlay);
/// writes stay in memory until the group's write statement. Used on one
/// writer thread only, and never outlives its push.
final class PostgresGroupPushTransaction: PushTransaction {
    /// A dry run stops at a lookup and only notes what was asked; `run` is the real one.
    enum Stage {
        /// Notes the change ids asked for (answering "none seen") and the
        /// entity rows asked for, and stops there.
        case probe
        case run
    }

    /// Thrown by a dry run where it stops; never leaves the group writer.
    struct ProbeStop: Error {}

    let connection: PostgresConnection
    let account: AccountID
    private let group: PostgresGroupOverlay
    private let stage: Stage
    private(set) var writes: [StoredEntity] = []
    private(set) var records: [IdempotencyRecord] = []
    private(set) var newCounter: Int64?
    private(set) var askedChangeIds: [ChangeID] = []
    private(set) var askedRefs: [EntityRef] = []

    init(connection: PostgresConnection, account: AccountID, group: PostgresGroupOverlay, stage: Stage) {
        self.connection = connection
        self.account = account
        self.group = group
        self.stage = stage
    }

    func lockAccount() throws -> Int64 {
        // The group locked every account row before any push ran; a dry
        // run stops before the counter matters.
        if stage == .probe { return 0 }
        guard let counter = group.counters[account] else {
            throw ServerStoreError.failure("account \(account) does not exist")
        }
        return counter
    }

    func idempotencyRecords(_ changeIds: [ChangeID]) throws -> [ChangeID: IdempotencyRecord] {
        if stage == .probe {
            askedChangeIds = changeIds
            return [:]
        }
        // Answered earlier in this group, else read before the pushes ran.
        let known = group.records[account] ?? [:]
        let prefetched = group.prefetchedRecords[account] ?? [:]
        let checked = group.checkedChangeIds[account] ?? []
        var records: [ChangeID: IdempotencyRecord] = [:]
        var unknown: [ChangeID] = []
        for changeId in changeIds {
            if let record = known[changeId] ?? prefetched[changeId] {
                records[changeId] = record
            } else if !checked.contains(changeId) {
                unknown.append(changeId)
            }
        }
        guard !unknown.isEmpty else { return records }
        return records.merging(try PostgresPushTransaction.records(unknown, of: account, on: connection)) { $1 }
    }

    func lockEntities(_ refs: [EntityRef]) throws -> [EntityRef: StoredEntity] {
        if stage == .probe {
            askedRefs = refs
            throw ProbeStop()
        }
        let known = group.entities[account] ?? [:]
        let prefetched = group.prefetchedEntities[account] ?? [:]
        let checked = group.checkedRefs[account] ?? []
        var entities: [EntityRef: StoredEntity] = [:]
        // Rows an earlier push of the group wrote are locked (or, if new,
        // covered by the account lock) already, and so are prefetched rows;
        // a row written earlier in the group is newer than its prefetched copy.
        let unknown = refs.filter { ref in
            if let entity = known[ref] ?? prefetched[ref] {
                entities[ref] = entity
                return false
            }
            return !checked.contains(ref)
        }
        guard !unknown.isEmpty else { return entities }
        let read = try PostgresPushTransaction.lockRows(unknown, of: account, on: connection)
        group.noteExisting(read.keys, of: account)
        return entities.merging(read) { $1 }
    }

    func entity(_ ref: EntityRef) throws -> StoredEntity? {
        if let entity = writes.last(where: { $0.ref == ref }) ?? group.entities[account]?[ref]
            ?? group.prefetchedEntities[account]?[ref]
        {
            return entity
        }
        let read = try PostgresPushTransaction.row(ref, of: account, on: connection)
        if read != nil { group.noteExisting([ref], of: account) }
        return read
    }

    func write(_ entity: StoredEntity, replacing previous: StoredEntity?) throws {
        writes.append(entity)
    }

    func remember(_ record: IdempotencyRecord) throws {
        records.append(record)
    }

    func setCounter(_ counter: Int64) throws {
        newCounter = counter
    }
}
