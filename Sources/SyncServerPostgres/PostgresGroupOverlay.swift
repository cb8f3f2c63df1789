import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer

/// What the pushes of one optimistic group wrote so far, in memory until the
/// group's single write statement: later pushes of an account read it instead
/// of the database. Used on one writer thread only.
final class PostgresGroupOverlay {
    /// Counters of the locked accounts, as the pushes so far left them.
    var counters: [AccountID: Int64]
    var entities: [AccountID: [EntityRef: StoredEntity]] = [:]
    var records: [AccountID: [ChangeID: IdempotencyRecord]] = [:]
    /// Writes in order, for the write statement (later rows of a ref win).
    private var writeOrder: [(AccountID, EntityRef)] = []
    /// Every version the group wrote of each ref, oldest first: all but the
    /// last go into the history as replaced by the next one.
    private var versionsWritten: [AccountID: [EntityRef: [StoredEntity]]] = [:]
    private var recordRows: [(AccountID, IdempotencyRecord)] = []
    private var changedCounters = Set<AccountID>()
    /// Answers read before the pushes ran, and the change ids asked for (an
    /// id asked for and absent here was not in the database).
    var prefetchedRecords: [AccountID: [ChangeID: IdempotencyRecord]] = [:]
    var checkedChangeIds: [AccountID: Set<ChangeID>] = [:]
    /// Entity rows locked before the pushes ran, and the refs asked for.
    var prefetchedEntities: [AccountID: [EntityRef: StoredEntity]] = [:]
    var checkedRefs: [AccountID: Set<EntityRef>] = [:]
    /// Refs whose row was in the table when read under the account lock (it
    /// stays there until commit): the write statement updates these in
    /// place and inserts the others.
    private var existingRefs: [AccountID: Set<EntityRef>] = [:]

    init(counters: [AccountID: Int64]) { self.counters = counters }

    /// The accounts whose counter moved, ascending.
    var appliedAccounts: [AccountID] { changedCounters.sorted { $0.rawValue < $1.rawValue } }

    /// The statement reading the remembered answers of every `(account,
    /// change id)` asked for; nil when none was.
    func prefetchRecordsStatement(_ asked: [(AccountID, [ChangeID])]) -> PostgresConnection.Statement? {
        var accounts: [Int64] = []
        var changeIds: [UUID?] = []
        for (account, ids) in asked {
            for id in ids where checkedChangeIds[account, default: []].insert(id).inserted {
                accounts.append(account.rawValue)
                changeIds.append(id.uuid)
            }
        }
        guard !accounts.isEmpty else { return nil }
        return PostgresConnection.Statement(
            """
            SELECT s.account_id, s.change_id, s.payload_hash, s.result, s.created_at
            FROM unnest($1::int8[], $2::uuid[]) AS r(account_id, change_id)
            JOIN seen_changes s ON s.account_id = r.account_id AND s.change_id = r.change_id
            """, [.array(.int64(accounts)), .array(.uuid(changeIds))])
    }

    func readRecords(_ rows: PostgresResult) throws {
        for row in 0..<rows.rowCount {
            let changeId = ChangeID(try rows.uuid(row, 1))
            prefetchedRecords[AccountID(try rows.int64(row, 0)), default: [:]][changeId] = IdempotencyRecord(
                changeId: changeId, payloadHash: Array(try rows.data(row, 2)), result: try rows.data(row, 3),
                createdAt: PostgresServerStore.date(milliseconds: try rows.int64(row, 4)))
        }
    }

    /// The statement reading the entity rows every push asked for, after
    /// every account row was locked. The rows need no lock of their own:
    /// every statement that writes an entity row (a push, retention, the
    /// isolated path) holds its account row first, so the account locks
    /// already keep every other writer out until commit. Locking them cost a
    /// sort, a lock per row and its WAL record (docs/postgres.md, "Benchmark").
    /// Nil when no push asked for any.
    func prefetchEntitiesStatement(_ wanted: [(AccountID, [EntityRef])]) -> PostgresConnection.Statement? {
        var accounts: [Int64] = []
        var kinds: [String] = []
        var ids: [UUID?] = []
        for (account, refs) in wanted {
            for ref in refs where checkedRefs[account, default: []].insert(ref).inserted {
                accounts.append(account.rawValue)
                kinds.append(ref.kind.rawValue)
                ids.append(ref.id)
            }
        }
        guard !accounts.isEmpty else { return nil }
        return PostgresConnection.Statement(
            """
            SELECT e.account_id, \(PostgresServerStore.entityColumns)
            FROM unnest($1::int8[], $2::text[], $3::uuid[]) AS r(account_id, kind, id)
            JOIN entities e ON e.account_id = r.account_id AND e.kind = r.kind AND e.id = r.id
            """, [.array(.int64(accounts)), .array(.text(kinds)), .array(.uuid(ids))])
    }

    func readEntities(_ rows: PostgresResult) throws {
        for row in 0..<rows.rowCount {
            let entity = try PostgresServerStore.entity(rows, row, from: 1)
            let account = AccountID(try rows.int64(row, 0))
            prefetchedEntities[account, default: [:]][entity.ref] = entity
            existingRefs[account, default: []].insert(entity.ref)
        }
    }

    /// Notes rows a push read on the spot (the probe did not foresee them).
    func noteExisting(_ refs: some Sequence<EntityRef>, of account: AccountID) {
        existingRefs[account, default: []].formUnion(refs)
    }

    /// Takes in a push that returned without error.
    func merge(_ push: PostgresGroupPushTransaction) {
        let account = push.account
        for entity in push.writes {
            if entities[account, default: [:]].updateValue(entity, forKey: entity.ref) == nil {
                writeOrder.append((account, entity.ref))
            }
            versionsWritten[account, default: [:]][entity.ref, default: []].append(entity)
        }
        for record in push.records {
            records[account, default: [:]][record.changeId] = record
            recordRows.append((account, record))
        }
        if let counter = push.newCounter {
            counters[account] = counter
            changedCounters.insert(account)
        }
    }

    /// The one statement sending every row, answer and counter of the group;
    /// its text is fixed (columns travel as arrays), so it is prepared once.
    func writeStatement() -> PostgresConnection.Statement? {
        guard !writeOrder.isEmpty || !recordRows.isEmpty || !changedCounters.isEmpty else { return nil }
        var rows: [(account: Int64, entity: StoredEntity, existed: Bool)] = []
        for (account, ref) in writeOrder {
            if let entity = entities[account]?[ref] {
                rows.append((account.rawValue, entity, existingRefs[account]?.contains(ref) == true))
            }
        }
        // The rows the group replaces go into the history: those it found in
        // the table are copied there by the statement (as replaced by the
        // group's first write of the ref), versions written and replaced
        // within the group are sent. A row never seen in the table is
        // inserted; should it be there after all, the insert fails and the
        // group runs isolated.
        var superseded: [(account: Int64, ref: EntityRef, replacedAt: Int64)] = []
        var intermediate: [(account: Int64, entity: StoredEntity, replacedAt: Int64)] = []
        for (account, ref) in writeOrder {
            let versions = versionsWritten[account]?[ref] ?? []
            guard let first = versions.first else { continue }
            if existingRefs[account]?.contains(ref) == true {
                superseded.append((account.rawValue, ref, PostgresServerStore.milliseconds(first.updatedAt)))
            }
            for (older, newer) in zip(versions, versions.dropFirst()) {
                intermediate.append((account.rawValue, older, PostgresServerStore.milliseconds(newer.updatedAt)))
            }
        }
        var counterAccounts: [Int64] = []
        var counterValues: [Int64] = []
        for account in appliedAccounts {
            if let counter = counters[account] {
                counterAccounts.append(account.rawValue)
                counterValues.append(counter)
            }
        }
        let entityColumns: [PostgresValue] = [
            .array(.int64(rows.map(\.account))),
            .array(.text(rows.map(\.entity.ref.kind.rawValue))),
            .array(.uuid(rows.map(\.entity.ref.id))),
            .array(.int64(rows.map(\.entity.version))),
            .array(.uuid(rows.map(\.entity.changeId.uuid))),
            .array(.bool(rows.map(\.entity.deleted))),
            .array(.text(rows.map(\.entity.name))),
            .array(.bytes(rows.map(\.entity.body))),
            .array(.uuid(rows.map(\.entity.parentId))),
            .array(.int64(rows.map { PostgresServerStore.milliseconds($0.entity.updatedAt) })),
            .array(.uuid(rows.map { $0.entity.device?.uuid })),
            .array(.bool(rows.map(\.existed))),
        ]
        let recordColumns: [PostgresValue] = [
            .array(.int64(recordRows.map(\.0.rawValue))),
            .array(.uuid(recordRows.map(\.1.changeId.uuid))),
            .array(.bytes(recordRows.map { Data($0.1.payloadHash) })),
            .array(.bytes(recordRows.map(\.1.result))),
            .array(.int64(recordRows.map { PostgresServerStore.milliseconds($0.1.createdAt) })),
        ]
        let counterColumns: [PostgresValue] = [.array(.int64(counterAccounts)), .array(.int64(counterValues))]
        let supersededColumns: [PostgresValue] = [
            .array(.int64(superseded.map(\.account))),
            .array(.text(superseded.map(\.ref.kind.rawValue))),
            .array(.uuid(superseded.map(\.ref.id))),
            .array(.int64(superseded.map(\.replacedAt))),
        ]
        let intermediateColumns: [PostgresValue] = [
            .array(.int64(intermediate.map(\.account))),
            .array(.text(intermediate.map(\.entity.ref.kind.rawValue))),
            .array(.uuid(intermediate.map(\.entity.ref.id))),
            .array(.int64(intermediate.map(\.entity.version))),
            .array(.uuid(intermediate.map(\.entity.changeId.uuid))),
            .array(.bool(intermediate.map(\.entity.deleted))),
            .array(.text(intermediate.map(\.entity.name))),
            .array(.bytes(intermediate.map(\.entity.body))),
            .array(.uuid(intermediate.map(\.entity.parentId))),
            .array(.int64(intermediate.map { PostgresServerStore.milliseconds($0.entity.updatedAt) })),
            .array(.uuid(intermediate.map { $0.entity.device?.uuid })),
            .array(.int64(intermediate.map(\.replacedAt))),
        ]
        return PostgresConnection.Statement(
            Self.writeSQL,
            entityColumns + recordColumns + counterColumns + supersededColumns + intermediateColumns)
    }

    /// The group's write statement. Every part reads the snapshot from
    /// before it, so `superseded` copies the rows `updated` replaces.
    /// Rows known to be in the table are updated, not upserted: `ON
    /// CONFLICT DO UPDATE` probes the key index again and locks the row (a
    /// WAL record) before it updates it.
    static let writeSQL =
        """
        WITH superseded AS (
            INSERT INTO entity_versions(account_id, kind, id, version, change_id, deleted, name, body, parent_id,
                updated_at, device, replaced_at)
            SELECT e.account_id, e.kind, e.id, e.version, e.change_id, e.deleted, e.name, e.body, e.parent_id,
                e.updated_at, e.device, r.replaced_at
            FROM unnest($20::int8[], $21::text[], $22::uuid[], $23::int8[]) AS r(account_id, kind, id, replaced_at)
            JOIN entities e ON e.account_id = r.account_id AND e.kind = r.kind AND e.id = r.id),
        intermediate AS (
            INSERT INTO entity_versions(account_id, kind, id, version, change_id, deleted, name, body, parent_id,
                updated_at, device, replaced_at)
            SELECT * FROM unnest($24::int8[], $25::text[], $26::uuid[], $27::int8[], $28::uuid[], $29::bool[],
                $30::text[], $31::bytea[], $32::uuid[], $33::int8[], $34::uuid[], $35::int8[])),
        written AS (
            SELECT * FROM unnest($1::int8[], $2::text[], $3::uuid[], $4::int8[], $5::uuid[], $6::bool[],
                $7::text[], $8::bytea[], $9::uuid[], $10::int8[], $11::uuid[], $12::bool[])
                AS w(account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device,
                    existed)),
        updated AS (
            UPDATE entities e SET
                version = w.version, change_id = w.change_id, deleted = w.deleted, name = w.name,
                body = w.body, parent_id = w.parent_id, updated_at = w.updated_at, device = w.device
            FROM written w
            WHERE w.existed AND e.account_id = w.account_id AND e.kind = w.kind AND e.id = w.id),
        inserted AS (
            INSERT INTO entities(account_id, kind, id, version, change_id, deleted, name, body, parent_id,
                updated_at, device)
            SELECT account_id, kind, id, version, change_id, deleted, name, body, parent_id, updated_at, device
            FROM written WHERE NOT existed),
        remembered AS (
            INSERT INTO seen_changes(account_id, change_id, payload_hash, result, created_at)
            SELECT * FROM unnest($13::int8[], $14::uuid[], $15::bytea[], $16::bytea[], $17::int8[]))
        UPDATE accounts a SET counter = c.counter
        FROM unnest($18::int8[], $19::int8[]) AS c(account_id, counter)
        WHERE a.account_id = c.account_id
        """
}
