import Foundation
import NotesModel
import NotesStore
import SQLiteKit

/// One `rm -rf` of most of a device's notes, made in batches while the
/// device keeps syncing: what the guard must hold.
struct SimMassDelete {
    var device: Int
    /// The ids of the deleted notes the server had when the `rm -rf` began.
    var syncedNotes: Set<String>
    /// How many of them the guard may let through: a handful, or half of the
    /// notes this device could count as live at the window's start.
    var allowance: Int
    /// The notes this device could count when the `rm -rf` began (its own and
    /// those only the server had yet).
    var knownAtStart: Set<String> = []
    /// Notes made elsewhere that reached this device during the `rm -rf`
    /// before the guard tripped: the guard counts them live at the window's
    /// start (docs/sync.md: live now plus deleted), so each raises the bound.
    var arrived: Set<String> = []
}

// `rm -rf` in batches while a sync is under way (docs/simulation.md "Mass
// deletes"). The person did not mean it: every hold is answered with
// `notesfs sync --restore-held`, so at most the guard's allowance may be gone.
extension SimWorld {
    /// About one run in three ends with a mass delete, drawn from the seed
    /// alone so runs without one replay exactly as before.
    var massDeleteHappens: Bool {
        var draw = SimRandom(seed: seed ^ 0x4D41_5353_4445_4C45)
        return draw.int(1...3) == 1
    }

    /// Before the network heals: one device fills a folder with more notes
    /// than it had, syncs, then removes the folder a few files at a time,
    /// syncing after most batches, faults still on.
    func maybeMassDelete() async throws {
        guard massDeleteHappens, let device = random.pick(devices) else { return }
        let before = try device.snapshot().filter { $0.hasPrefix("note ") }.count
        let count = min(80, before + random.int(6...12))
        let folderName = "Bulk\(step)"
        let folder = try device.store.tree.makeDirectory(in: .root, name: folderName)
        guard let directory = folder.ref.directory else { return }
        for index in 0..<count {
            let body = SimText.body(newLines(random.int(1...2)))
            try device.store.admin.createNote(in: directory, title: "b\(index).md", body: body)
            wrote(body)
        }
        trace("\(device.name) fills \(folderName) with \(count) notes, then rm -rf's it in batches")
        try await sync(device)
        let synced = try bulkNotes(devices[device.index], folderName: folderName)
        let liveHere = try devices[device.index].snapshot().filter { $0.hasPrefix("note ") }
        let serverIDs = Set(try serverSnapshot().filter { $0.hasPrefix("note ") }.map(Self.entityID))
        let serverOnly = serverIDs.subtracting(liveHere.map(Self.entityID)).count
        let allowance = max(NotesStore.massDeleteHandful, (liveHere.count + serverOnly) / 2)
        massDeletes.append(
            SimMassDelete(
                device: device.index, syncedNotes: synced, allowance: allowance,
                knownAtStart: serverIDs.union(liveHere.map(Self.entityID))))
        let record = massDeletes.count - 1

        var names = (0..<count).map { "b\($0).md" }
        while !names.isEmpty {
            let size = min(names.count, random.int(1...5))
            let batch = names.prefix(size)
            names.removeFirst(size)
            let current = devices[device.index]
            guard let inner = try current.store.tree.lookup(in: .root, name: folderName)?.ref.directory else { break }
            for name in batch {
                // rm removes what it finds (an edit made during a push may have changed it); the
                // check below decides how much of it may really go.
                guard let entry = try current.store.tree.lookup(in: inner, name: name) else { continue }
                removedOnPurpose(try current.store.admin.contents(of: entry.ref))
                try current.store.tree.removeFile(in: inner, name: name)
            }
            trace("\(current.name) rm \(batch.joined(separator: " "))")
            if random.chance(0.8) {
                if breakage == .guardCountsPerPush { try forgetDeletionsSent(current) }
                try await sync(current)
                try noteArrivals(record)
            }
        }
        try? devices[device.index].store.tree.removeDirectory(in: .root, name: folderName)
        try await sync(devices[device.index])
        try noteArrivals(record)
    }

    /// While the guard has not tripped, notes made elsewhere that this sync
    /// brought in raise the bound as the guard reckons it: half of the notes
    /// at the rm's start plus those that arrived.
    private func noteArrivals(_ record: Int) throws {
        let massDelete = massDeletes[record]
        let device = devices[massDelete.device]
        guard try device.store.admin.massDeleteHold().sinceNanoseconds == nil else { return }
        let live = Set(try device.snapshot().filter { $0.hasPrefix("note ") }.map(Self.entityID))
        massDeletes[record].arrived.formUnion(live.subtracting(massDelete.knownAtStart))
        let counted = massDelete.knownAtStart.count + massDeletes[record].arrived.count
        massDeletes[record].allowance = max(NotesStore.massDeleteHandful, counted / 2)
    }

    /// The notes in the bulk folder that the server has.
    private func bulkNotes(_ device: SimDevice, folderName: String) throws -> Set<String> {
        Set(
            try device.reader.query(
                """
                SELECT n.id FROM notes n JOIN folders f ON f.id = n.folder_id
                WHERE f.name = ? AND f.deleted = 0 AND n.deleted = 0 AND n.server_version IS NOT NULL
                """, folderName
            ) { $0.string(0) })
    }

    static func entityID(_ line: String) -> String {
        String(line.split(separator: " ").dropFirst().first ?? "")
    }

    /// The `guardCountsPerPush` breakage: the guard forgets what it let
    /// through, so each push is judged on its own batch.
    private func forgetDeletionsSent(_ device: SimDevice) throws {
        let db = try Connection(path: device.path)
        try db.run("DELETE FROM deletion_log")
        trace("\(device.name) (broken) forgets the deletions it sent")
    }

    /// The person answers a hold: after a mass delete they did not mean,
    /// `notesfs sync --restore-held`; otherwise `--allow-mass-delete`.
    func answerHeldDeletions(_ device: SimDevice) throws {
        if let scheduler = device.scheduler {
            // As `notesfs sync --allow-mass-delete` / `--restore-held` reach a mount: through its scheduler.
            let line = try scheduler.settleHeldDeletions(massDeletes.isEmpty ? .allow : .restore)
            trace("\(device.name) answers held deletions through its scheduler: \(line)")
            return
        }
        if massDeletes.isEmpty {
            trace("\(device.name) confirms held deletions (--allow-mass-delete)")
            try device.store.admin.confirmMassDelete()
        } else {
            let restore = try device.store.admin.restoreHeldDeletions()
            trace("\(device.name) restores held deletions (--restore-held): \(restore.summary)")
        }
    }

    /// After quiet: of the notes a mass delete removed, at most the guard's
    /// allowance may be gone; every other one is back, live on every machine.
    func checkMassDeletes() throws {
        let live = try devices.map { Set(try $0.snapshot().filter { $0.hasPrefix("note ") }.map(Self.entityID)) }
        for massDelete in massDeletes {
            let gone = massDelete.syncedNotes.filter { id in !live.allSatisfy { $0.contains(id) } }.count
            trace(
                "mass delete on dev\(massDelete.device): \(gone) of \(massDelete.syncedNotes.count) synced notes gone "
                    + "(allowance \(massDelete.allowance))")
            if gone > massDelete.allowance {
                violation(
                    "mass delete on dev\(massDelete.device) walked past the guard: \(gone) of "
                        + "\(massDelete.syncedNotes.count) notes gone everywhere, at most \(massDelete.allowance) may be")
            }
        }
    }
}
