import Foundation
import NotesModel
import SyncProtocol

/// One change of a push, checked and hashed before the transaction starts, so
/// the work done under the account lock is only the compare-and-swap.
struct PreparedChange: Sendable {
    let change: Change
    /// SHA-256 of the canonical payload, for idempotency.
    let payloadHash: [UInt8]
    /// The decoded note body (empty for folders and deletes).
    let body: Data
    /// Set when the change can never apply, whatever its base.
    let refusal: (reason: RefusalReason, message: String)?

    init(_ change: Change, limits: ProtocolLimits) throws(ServerError) {
        self.change = change
        var body = Data()
        var refusal: (RefusalReason, String)?
        if let note = change.note {
            guard let bytes = note.bodyBytes() else {
                throw .badRequest("change \(change.changeId): body is not valid base64")
            }
            body = bytes
            if bytes.count > limits.noteBytesMax {
                refusal = (
                    .noteTooLarge, "the note has \(bytes.count) bytes; this server keeps notes up to \(limits.noteBytesMax)"
                )
            } else if note.title.utf8.count > limits.nameBytesMax {
                refusal = (.nameTooLong, "the title is longer than \(limits.nameBytesMax) bytes")
            }
        }
        if let folder = change.folder, folder.name.utf8.count > limits.nameBytesMax {
            refusal = (.nameTooLong, "the folder name is longer than \(limits.nameBytesMax) bytes")
        }
        self.body = body
        self.refusal = refusal
        self.payloadHash = PayloadHash.of(change, body: body)
    }
}

/// The canonical payload hash of a change: what it does, independent of how
/// its JSON was spelled (key order, text or base64 body).
enum PayloadHash {
    /// The hashed bytes are each field's UTF-8 followed by a NUL, then the
    /// note body's bytes; the fields go into one buffer first so the hasher
    /// is called twice, not once per field.
    static func of(_ change: Change, body: Data) -> [UInt8] {
        var fields: [UInt8] = []
        fields.reserveCapacity(160 + (change.note?.title.utf8.count ?? 0) + (change.folder?.name.utf8.count ?? 0))
        func field(_ text: String) {
            fields.append(contentsOf: text.utf8)
            fields.append(0)
        }
        field(change.kind.rawValue)
        field(UUIDText.format(change.id))
        field(change.op.rawValue)
        field(change.baseVersion.map(String.init) ?? "null")
        var hasher = SHA256()
        if let note = change.note {
            field("note")
            field(note.title)
            field(note.folderId?.description ?? "null")
            field(String(body.count))
            hasher.update(fields)
            hasher.update(body)
            fields.removeAll(keepingCapacity: true)
        }
        if let folder = change.folder {
            field("folder")
            field(folder.name)
            field(folder.parentId?.description ?? "null")
        }
        hasher.update(fields)
        return hasher.finalize()
    }
}

/// How many changes of a push ended which way.
struct PushTally: Sendable, Equatable {
    var applied = 0
    /// Puts answered `applied` at the current version without a new one:
    /// they carried exactly what it holds.
    var unchanged = 0
    var conflicts = 0
    var refused = 0
    var replayed = 0
}

/// The server rules for one push, run inside the store's transaction. Shared
/// by every backend; the backend supplies only `PushTransaction`.
enum PushProcessor {
    /// How deep a folder chain may go before a move is refused as a cycle.
    static let folderDepthMax = 4_096

    /// Each change's encoded result, the tally, and the head when every
    /// version after the pusher's cursor is this push's own.
    typealias Outcome = (results: [Data], tally: PushTally, caughtUp: Int64?)

    /// Applies `changes` in order and returns each change's encoded result.
    /// Throws `ServerError.changeIdReused` (rolling everything back) when a
    /// known change id comes with a different payload.
    /// Applies `changes` in order under the account lock. `clientCounter` is
    /// where the pusher's cursor stands; when the head stood exactly there,
    /// every version up to the new head is this push's own, and `caughtUp`
    /// returns that head so the client need not pull its own changes back.
    static func apply(
        _ changes: [PreparedChange], in transaction: any PushTransaction, device: DeviceID, now: Date,
        clientCounter: Int64
    ) throws -> Outcome {
        var counter = try transaction.lockAccount()
        let startCounter = counter
        let seen = try transaction.idempotencyRecords(changes.map(\.change.changeId))
        let fresh = changes.filter { seen[$0.change.changeId] == nil }
        var current = try transaction.lockEntities(fresh.map(\.change.ref).sorted())
        var results: [Data] = []
        var tally = PushTally()
        for prepared in changes {
            let change = prepared.change
            if let record = seen[change.changeId] {
                guard record.payloadHash == prepared.payloadHash else {
                    throw ServerError.changeIdReused(change.changeId)
                }
                results.append(record.result)
                tally.replayed += 1
                continue
            }
            let outcome: ChangeResult.Outcome
            let existing = current[change.ref]
            // A stale base is a conflict first, even for a change that would
            // be refused: a client settling a refusal resets the note to its
            // base, and on a stale base it would never learn the newer version
            // (its pulls skipped it while the note was dirty).
            if change.baseVersion != existing?.version {
                outcome = .conflict(current: existing?.wire)
                tally.conflicts += 1
            } else if let refusal = prepared.refusal {
                outcome = .refused(reason: refusal.reason, message: refusal.message)
                tally.refused += 1
            } else if change.kind == .folder, change.op == .put,
                try makesCycle(folder: change.id, parent: change.folder?.parentId?.uuid, current, transaction)
            {
                outcome = .refused(reason: .folderCycle, message: "the move would put the folder inside itself")
                tally.refused += 1
            } else if let existing, Self.holdsAlready(existing, change, body: prepared.body) {
                // Nothing to record (a client bringing back a note whose
                // deletion it held, or saving what it last pulled): a new
                // version would only show every machine and the history a
                // change that changed nothing.
                outcome = .applied(version: existing.version)
                tally.unchanged += 1
            } else {
                counter += 1
                let entity = StoredEntity(
                    ref: change.ref, version: counter, changeId: change.changeId, deleted: change.op == .delete,
                    name: change.note?.title ?? change.folder?.name ?? "", body: prepared.body,
                    parentId: change.note?.folderId?.uuid ?? change.folder?.parentId?.uuid, updatedAt: now,
                    device: device)
                try transaction.write(entity, replacing: existing)
                current[change.ref] = entity
                outcome = .applied(version: counter)
                tally.applied += 1
            }
            let result = ChangeResult(changeId: change.changeId, outcome: outcome).wireJSON
            try transaction.remember(
                IdempotencyRecord(
                    changeId: change.changeId, payloadHash: prepared.payloadHash, result: result, createdAt: now))
            results.append(result)
        }
        assert(counter == startCounter + Int64(tally.applied), "every applied change takes exactly one version")
        if counter != startCounter { try transaction.setCounter(counter) }
        return (results, tally, startCounter == clientCounter ? counter : nil)
    }

    /// True when `change` is a put of exactly what the live `existing` holds:
    /// the same title or name, body and parent.
    static func holdsAlready(_ existing: StoredEntity, _ change: Change, body: Data) -> Bool {
        guard change.op == .put, !existing.deleted else { return false }
        if let note = change.note {
            return existing.name == note.title && existing.parentId == note.folderId?.uuid && existing.body == body
        }
        if let folder = change.folder {
            return existing.name == folder.name && existing.parentId == folder.parentId?.uuid && existing.body.isEmpty
        }
        return false
    }

    /// True when making `parent` the parent of `folder` puts the folder inside
    /// itself, following live folders only (a deleted or unknown folder ends
    /// the chain: clients show what is inside it in the root).
    static func makesCycle(
        folder: UUID, parent: UUID?, _ current: [EntityRef: StoredEntity], _ transaction: any PushTransaction
    ) throws -> Bool {
        var next = parent
        var depth = 0
        while let id = next {
            if id == folder { return true }
            depth += 1
            if depth > folderDepthMax { return true }
            let ref = EntityRef(kind: .folder, id: id)
            guard let entity = try current[ref] ?? transaction.entity(ref), !entity.deleted else { return false }
            next = entity.parentId
        }
        return false
    }
}
