import Foundation
import NotesModel
import NotesStore
import SQLiteKit
import SyncProtocol
import SyncServer

// The invariants: checked after quiet, and (dirty text, idempotency,
// refusals) all along.
extension SimWorld {
    func openServerReader() throws -> Connection {
        try Connection(path: serverPath, options: .init(mode: .readOnly, walJournal: false))
    }

    /// The server's live notes and folders, in the devices' snapshot format.
    func serverSnapshot() throws -> [String] {
        let db = try openServerReader()
        return try db.readTransaction {
            let folders = try db.query(
                "SELECT id, name, parent_id FROM entities WHERE account_id = ? AND kind = 'folder' AND deleted = 0 ORDER BY id",
                account.rawValue
            ) { "folder \($0.string(0)) \($0.string(1).debugDescription) parent=\($0.optionalString(2) ?? "-")" }
            let notes = try db.query(
                """
                SELECT e.id, e.name, e.parent_id, hex(v.body) FROM entities e JOIN entity_versions v
                    ON v.account_id = e.account_id AND v.kind = e.kind AND v.id = e.id AND v.version = e.version
                WHERE e.account_id = ? AND e.kind = 'note' AND e.deleted = 0 ORDER BY e.id
                """, account.rawValue
            ) {
                "note \($0.string(0)) \($0.string(1).debugDescription) folder=\($0.optionalString(2) ?? "-") \($0.string(3))"
            }
            return folders + notes
        }
    }

    /// The server's folders (parent, deleted) before a push with folder puts, to judge cycle refusals.
    func serverFoldersBeforePush(_ push: PushRequest) -> [UUID: (parent: UUID?, deleted: Bool)]? {
        guard push.changes.contains(where: { $0.kind == .folder && $0.op == .put }) else { return nil }
        do {
            let db = try openServerReader()
            var folders: [UUID: (parent: UUID?, deleted: Bool)] = [:]
            try db.forEachRow(
                "SELECT id, parent_id, deleted FROM entities WHERE account_id = ? AND kind = 'folder'",
                arguments: [account.rawValue]
            ) { row in
                if let id = UUIDText.parse(row.string(0)) {
                    folders[id] = (row.optionalString(1).flatMap(UUID.init(uuidString:)), row.bool(2))
                }
                return true
            }
            return folders
        } catch {
            violation("cannot read the server's folders: \(error)")
            return nil
        }
    }

    /// Records every answer the server produced for a push (delivered or
    /// not) and checks idempotency and refusals as they happen.
    func recordPushAnswer(
        device: Int, request: PushRequest, status: Int, body: Data,
        foldersBefore: [UUID: (parent: UUID?, deleted: Bool)]?, originals: [ChangeID: ChangeID]
    ) {
        guard status == 200 else {
            noteWholeRequestRefusal(device: device, request: request, status: status, body: body)
            // 410 is right for a push whose cursor is from an epoch the server left.
            let staleCursor = status == 410 && request.cursor.map { $0.epoch != epoch } == true
            if (400..<500).contains(status), status != 409, !staleCursor {
                let applicable = request.changes.allSatisfy { change in
                    (change.note?.bodyBytes()?.count ?? 0) <= configuration.serverNoteLimit
                }
                if request.changes.count == 1 && applicable {
                    violation("\(devices[device].name): the server rejected an applicable push with \(status)")
                }
            }
            return
        }
        guard let response = try? WireCoding.decoder().decode(PushResponse.self, from: body) else {
            violation("\(devices[device].name): unreadable push answer")
            return
        }
        var folders = foldersBefore ?? [:]
        for (change, result) in zip(request.changes, response.results) {
            let original = originals[change.changeId] ?? change.changeId
            let key = "\(epoch)|\(purgeGeneration)|\(original)"
            let earlier = answers[key] ?? []
            if let first = earlier.first, first != result.outcome {
                violation(
                    "change \(original) answered differently on a retry: first \(Self.describe(first)), "
                        + "now \(Self.describe(result.outcome))")
            }
            answers[key] = earlier + [result.outcome]
            trace("  server: \(change.kind.rawValue) \(change.id.uuidString.prefix(8)) \(change.op.rawValue) base \(change.baseVersion.map(String.init) ?? "nil") -> \(Self.describe(result.outcome))")
            switch result.outcome {
            case .refused(let reason, _):
                refusedByServer.insert(Refusal(device: device, ref: change.ref))
                if !isLegitimateRefusal(change, reason: reason, folders: folders) {
                    violation("\(devices[device].name): the server refused an applicable change \(original): \(reason)")
                }
            case .applied:
                if change.kind == .folder {
                    folders[change.id] = (change.folder?.parentId?.uuid, change.op == .delete)
                }
            case .conflict:
                break
            }
        }
    }

    static func describe(_ outcome: ChangeResult.Outcome) -> String {
        switch outcome {
        case .applied(let version): "applied v\(version)"
        case .conflict(let current): "conflict(current v\(current.map { String($0.version) } ?? "none"))"
        case .refused(let reason, _): "refused \(reason)"
        }
    }

    private func isLegitimateRefusal(
        _ change: Change, reason: RefusalReason, folders: [UUID: (parent: UUID?, deleted: Bool)]
    ) -> Bool {
        switch reason {
        case .noteTooLarge:
            return (change.note?.bodyBytes()?.count ?? 0) > configuration.serverNoteLimit
        case .folderCycle:
            guard change.kind == .folder, change.op == .put else { return false }
            var next = change.folder?.parentId?.uuid
            var depth = 0
            while let id = next, depth < 10_000 {
                if id == change.id { return true }
                guard let folder = folders[id], !folder.deleted else { return false }
                next = folder.parent
                depth += 1
            }
            return false
        default:
            return false
        }
    }

    /// No remote commit (a pull, a settle, a resync) may take text out of
    /// a note with local edits: it must survive on this device.
    func checkDirtyTextSurvives(_ device: SimDevice, after what: String) {
        guard !device.dirtyTokens.isEmpty else { return }
        do {
            let held = try device.heldTokens()
            let lost = device.dirtyTokens.subtracting(held).subtracting(removed)
            if !lost.isEmpty {
                violation("\(device.name): \(what) removed dirty local text: tokens \(lost.sorted().prefix(8))")
                device.dirtyTokens.subtract(lost)
            }
        } catch {
            violation("\(device.name): cannot read the store: \(error)")
        }
    }

    /// After quiet: convergence, empty outboxes, names, no lost text, integrity.
    func checkInvariants() async throws {
        let server = try serverSnapshot()
        for device in devices {
            let status = try device.store.admin.status()
            if status.pendingCount != 0 {
                violation("\(device.name): \(status.pendingCount) changes still in the outbox after quiet")
            }
            let snapshot = try device.snapshot()
            if snapshot != server {
                let missing = Set(server).subtracting(snapshot).sorted().prefix(3)
                let extra = Set(snapshot).subtracting(server).sorted().prefix(3)
                violation(
                    "\(device.name) differs from the server: lacks \(missing.map { String($0.prefix(160)) }) "
                        + "has extra \(extra.map { String($0.prefix(160)) })")
            }
            for problem in try device.nameProblems() { violation(problem) }
            let integrity = try device.store.admin.integrityCheck()
            if integrity != ["ok"] { violation("\(device.name): integrity_check says \(integrity.prefix(3))") }
        }
        let serverDB = try openServerReader()
        let serverIntegrity = try serverDB.integrityCheck()
        if serverIntegrity != ["ok"] { violation("server: integrity_check says \(serverIntegrity.prefix(3))") }
        try checkRefusalsCameFromTheServer()
        var held = Set<Int>()
        for device in devices { held.formUnion(try device.heldTokens()) }
        let lost = written.subtracting(removed).subtracting(held)
        if !lost.isEmpty {
            violation("lost text: \(lost.count) lines nobody removed are gone, e.g. tokens \(lost.sorted().prefix(10))")
        }
        try checkTextOnEveryDevice()
        for (key, outcomes) in answers {
            let versions = Set(outcomes.compactMap { outcome -> Int64? in
                if case .applied(let version) = outcome { return version }
                return nil
            })
            if versions.count > 1 { violation("change \(key) applied more than once: versions \(versions.sorted())") }
        }
        try checkMassDeletes()
        try checkOneConflictCopyPerNoteAndDevice()
    }

    /// At most one conflict copy per note and device: the copies a device
    /// made name their note, so two live ones naming the same note on one
    /// device break the rule (a further clash must update the copy), and each
    /// has the id of that note's copy from that device, which every later
    /// clash (and every machine) finds it by.
    func checkOneConflictCopyPerNoteAndDevice() throws {
        for device in devices {
            let deviceID = try device.store.admin.device().id
            let db = try Connection(path: device.path)
            let copies = try db.query(
                "SELECT id, conflict_of FROM notes WHERE deleted = 0 AND conflict_of IS NOT NULL ORDER BY seq"
            ) { (NoteID($0.string(0)), NoteID($0.string(1))) }
            var seen: [NoteID: Int] = [:]
            for case let (copy?, note?) in copies {
                seen[note, default: 0] += 1
                if copy != ConflictPolicy.conflictCopyID(of: note, device: deviceID) {
                    violation(
                        "\(device.name): conflict copy \(copy.description.prefix(8)) of note "
                            + "\(note.description.prefix(8)) is not that note's copy from this device")
                }
            }
            for (note, count) in seen where count > 1 {
                violation(
                    "\(device.name): \(count) conflict copies of note \(note.description.prefix(8)) from this device "
                        + "(one per note and device)")
            }
        }
    }

    /// The `forgetsToFreeze` breakage: an edit typed while the note's change
    /// is in flight is folded into that change, as an engine that never
    /// froze what it sends would do — so it is never sent on its own.
    func foldEditIntoChangeInFlight(_ device: SimDevice, noteID: String) throws {
        let db = try Connection(path: device.path)
        try db.run("DELETE FROM outbox WHERE entity_kind = 'note' AND entity_id = ? AND state = 'pending'", noteID)
        trace("\(device.name) (broken) folds the edit into the change in flight")
    }

    /// The `pullOverDirty` breakage: before the engine runs, the server's
    /// newer rows are written over local notes, dirty or not — as an engine
    /// that forgot the dirty check would.
    func forceApplyPulled(_ device: SimDevice) throws {
        device.dirtyTokens = try device.tokensInDirtyNotes()
        let serverDB = try openServerReader()
        let rows = try serverDB.query(
            """
            SELECT e.id, e.version, e.name, v.body, e.parent_id FROM entities e JOIN entity_versions v
                ON v.account_id = e.account_id AND v.kind = e.kind AND v.id = e.id AND v.version = e.version
            WHERE e.account_id = ? AND e.kind = 'note' AND e.deleted = 0
            """, account.rawValue
        ) { ($0.string(0), $0.int64(1), $0.string(2), $0.data(3), $0.optionalString(4)) }
        let db = try Connection(path: device.path)
        var overwritten = 0
        try db.transaction {
            for (id, version, title, body, folder) in rows {
                try db.run(
                    """
                    UPDATE notes SET title = ?, body = ?, folder_id = ?, server_version = ?, base_exists = 1,
                        base_title = ?, base_body = ?, base_folder_id = ?, synced_rev = local_rev
                    WHERE id = ? AND deleted = 0 AND ifnull(server_version, 0) < ?
                    """, title, body, folder, version, title, body, folder, id, version)
                overwritten += db.changes
                if db.changes > 0 {
                    try db.run("DELETE FROM outbox WHERE entity_kind = 'note' AND entity_id = ? AND state = 'pending'", id)
                }
            }
        }
        trace("\(device.name) (broken) force-applied \(overwritten) pulled notes")
        checkDirtyTextSurvives(device, after: "a force-applied pull")
    }
}
