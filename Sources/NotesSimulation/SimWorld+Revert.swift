import Foundation
import NotesModel
import NotesStore
import SyncProtocol
import SyncServer

/// The server's history and `notesfs revert` in the model. At one step the
/// world writes down what the server holds; after quiet it checks that the
/// server's tree as of that moment is exactly that, then reverts a device
/// to it, syncs to quiet again and checks that every device holds that tree.
extension SimWorld {
    /// The server's live notes and folders at the end of one step.
    struct ServerMoment {
        var step: Int
        var time: Date
        var entities: [String]
        /// Operator events that rewrite the server's past (restores, a fresh
        /// server, rebinds) so far: after another one, the moment is moot.
        var rewrites: Int
    }

    /// The step whose end is written down, drawn from its own stream so the
    /// rest of the run keeps the course the seed gives it.
    static func historyStep(seed: UInt64, steps: Int) -> Int {
        var random = SimRandom(seed: seed ^ 0x6869_7374_6f72_7921)
        return random.int(0...max(0, steps - 1))
    }

    var serverRewrites: Int {
        [SimFault.serverRestore, .restoreWithoutEpoch, .freshServer, .rebind].reduce(0) { $0 + (faultCounts[$1] ?? 0) }
    }

    var serverTime: Date { Date(timeIntervalSince1970: Double(time.now + time.serverJump) / 1e9) }

    func recordServerMoment() throws {
        serverMoment = ServerMoment(step: step, time: serverTime, entities: try serverSnapshot(), rewrites: serverRewrites)
        trace("the server's tree at the end of step \(step) is written down (\(serverMoment?.entities.count ?? 0) entities)")
        // Whatever the server applies next is stamped after the moment.
        time.advance(to: time.now + 1_000_000)
    }

    /// After quiet: the history's tree at the moment is what the server held
    /// then, and a revert to it brings every device there.
    func checkHistoryAndRevert() async throws {
        guard let moment = serverMoment else { return }
        guard moment.rewrites == serverRewrites else {
            trace("the server's past was rewritten after step \(moment.step) (a restore, a fresh server): no history check")
            return
        }
        let (past, keptSince) = try await serverTree(at: moment.time)
        if let keptSince, keptSince > moment.time {
            trace("the server's history is whole only from after step \(moment.step): no history check")
            return
        }
        let lines = Self.snapshotLines(past)
        if lines.sorted() != moment.entities.sorted() {
            let missing = Set(moment.entities).subtracting(lines).sorted().prefix(3)
            let extra = Set(lines).subtracting(moment.entities).sorted().prefix(3)
            violation(
                "the server's tree as of step \(moment.step) differs from what it held then: missing \(Array(missing)), "
                    + "extra \(Array(extra))")
            return
        }
        var stream = SimRandom(seed: seed ^ 0x7265_7665_7274)
        guard let device = devices.isEmpty ? nil : devices[stream.int(0...(devices.count - 1))] else { return }
        let steps = try device.store.admin.revert(to: past, within: [])
        trace("\(device.name) reverts to the end of step \(moment.step): \(steps.map(\.description))")
        try await syncToQuietAllowingDeletions()
        let created = steps.contains { $0.action == .create }
        // A folder that holds local-only files stays where it is.
        let kept = Set(steps.filter { $0.action == .keep }.map { "folder " + UUIDText.format($0.id) + " " })
        for other in devices {
            let held = Self.asShown(try other.snapshot().filter { line in !kept.contains { line.hasPrefix($0) } })
            let shown = Self.asShown(lines)
            let same = created ? Self.withoutIDs(held) == Self.withoutIDs(shown) : held.sorted() == shown.sorted()
            guard !same else { continue }
            let missing = Set(shown).subtracting(held).sorted().prefix(3)
            let extra = Set(held).subtracting(shown).sorted().prefix(3)
            violation(
                "\(other.name): after a revert to step \(moment.step) and a sync, it does not hold the tree of then: "
                    + "missing \(Array(missing)), extra \(Array(extra))")
        }
    }

    /// Every entity live at `time`, from the server's history, as a revert takes it.
    private func serverTree(at time: Date) async throws -> (past: [PastEntity], keptSince: Date?) {
        var past: [PastEntity] = []
        var after: EntityRef?
        var keptSince: Date?
        for _ in 0..<100_000 {
            let page = try await serverStore.tree(account: account, at: time, after: after, rowsMax: 200, bytesMax: 4 << 20, bodies: true)
            keptSince = page.keptSince
            for record in page.entries where !record.deleted {
                let parent = record.parentId.map(FolderID.init)
                switch record.ref.kind {
                case .note:
                    past.append(PastEntity(
                        id: record.ref.id, content: .note(NoteContent(title: record.name, body: record.body, folderID: parent))))
                case .folder:
                    past.append(PastEntity(
                        id: record.ref.id, content: .folder(FolderContent(name: record.name, parentID: parent))))
                }
            }
            guard page.hasMore, let last = page.last else { return (past, keptSince) }
            after = last
        }
        violation("the server's tree did not end after 100,000 pages")
        return (past, keptSince)
    }

    /// Fault-free syncs until quiet; deletions the guard holds are the revert's own, so they go ahead.
    private func syncToQuietAllowingDeletions() async throws {
        for _ in 0..<12 {
            for device in devices {
                if try device.store.admin.massDeleteHold().isHeld {
                    trace("\(device.name) confirms the revert's held deletions")
                    try device.store.admin.confirmMassDelete()
                }
                _ = try await sync(device)
            }
            if try isQuiet() { return }
        }
        violation("after a revert the devices did not reach quiet in 12 rounds of fault-free syncs")
    }

    /// The lines `serverSnapshot` and `SimDevice.snapshot` give for these entities.
    static func snapshotLines(_ past: [PastEntity]) -> [String] {
        past.map { entity in
            let id = UUIDText.format(entity.id)
            switch entity.content {
            case .folder(let folder):
                return "folder \(id) \(folder.name.debugDescription) parent=\(folder.parentID.map { $0.description } ?? "-")"
            case .note(let note):
                let hex = note.body.map { String(format: "%02X", $0) }.joined()
                return "note \(id) \(note.title.debugDescription) folder=\(note.folderID.map { $0.description } ?? "-") \(hex)"
            }
        }
    }

    /// Snapshot lines with every id left out, sorted (a note made again has a new one).
    /// The lines as a machine shows them: a note or folder whose folder is
    /// not among the live ones (deleted at the moment, while it stayed) sits
    /// in the root, which is what every machine showed then and what a
    /// revert gives back.
    static func asShown(_ lines: [String]) -> [String] {
        let folders = Set(lines.compactMap { line -> String? in
            let words = line.split(separator: " ")
            return words.count > 1 && words[0] == "folder" ? String(words[1]) : nil
        })
        return lines.map { line in
            line.split(separator: " ", omittingEmptySubsequences: false).map { word in
                let text = String(word)
                for prefix in ["parent=", "folder="] where text.hasPrefix(prefix) {
                    let id = String(text.dropFirst(prefix.count))
                    if id != "-" && !folders.contains(id) { return prefix + "-" }
                }
                return text
            }.joined(separator: " ")
        }
    }

    static func withoutIDs(_ lines: [String]) -> [String] {
        lines.map { line in
            line.split(separator: " ").map { word in
                let text = String(word)
                if UUIDText.parse(text) != nil { return "<id>" }
                for prefix in ["parent=", "folder="] where text.hasPrefix(prefix) && text != prefix + "-" {
                    return prefix + "<id>"
                }
                return text
            }.joined(separator: " ")
        }.sorted()
    }
}
