import Foundation
import NotesStore
import SQLiteKit

/// What each device last showed as an entry's ctime, by device index, and
/// the random stream touches draw from: their own, so adding them left every
/// other choice of a seed (and the regression seeds' runs) as it was.
struct SimTimesState {
    var changedSeen: [Int: [EntryRef: Int64]] = [:]
    var random: SimRandom?
    /// The chance that a local operation is preceded by a touch.
    static let touchRate = 0.1
}

// `touch` with times in the past and the future (rsync, tar and `touch -d`
// set them), through the store call the mount's setattr makes. The rules:
// a time change never queues a sync change (times are this machine's), and an
// entry's ctime never goes back — not across the touches, and not across
// whatever happened to the entry in between (writes, renames, pulls).
extension SimWorld {
    /// Before some local operations: a touch of one of `items` (or the root).
    func touchSometimes(_ device: SimDevice, _ items: [SimItem]) {
        var random = timesState.random ?? SimRandom(seed: seed ^ 0x7469_6D65_7300_0000)
        defer { timesState.random = random }
        guard random.chance(SimTimesState.touchRate), let ref = random.pick(items.map(\.ref) + [.root]) else {
            return
        }
        do {
            try touchEntry(device, ref, random: &random)
        } catch let error as StoreError {
            if case .database = error { violation("\(device.name): touch failed: \(error)") }
            trace("\(device.name) touch \(ref): \(error)")
        } catch {
            violation("\(device.name): touch failed: \(error)")
        }
    }

    private func touchEntry(_ device: SimDevice, _ ref: EntryRef, random: inout SimRandom) throws {
        let store = device.store
        let outboxBefore = try outboxRows(device)
        for _ in 0..<2 {
            guard let before = try store.tree.entry(for: ref) else { return }
            checkChangedForward(
                device, ref, shown: before.changedNanoseconds, after: "the changes since the last touch")
            // Decades back, or years ahead: either way the ctime is now.
            let day: Int64 = 86_400_000_000_000
            let modified = random.chance(0.2) ? nil : before.modifiedNanoseconds + Int64(random.int(-900...200)) * day
            let accessed =
                random.chance(0.5) ? nil : before.modifiedNanoseconds - Int64(random.int(0...900)) * 1_000_000_000
            try store.tree.setTimes(ref, accessed: accessed, modified: modified)
            trace(
                "\(device.name) touch \(ref) atime \(accessed.map(String.init) ?? "-") "
                    + "mtime \(modified.map(String.init) ?? "-")")
            if breakage == .ctimeFollowsMtime {
                // A store that keeps no ctime of its own shows the mtime.
                try Connection(path: device.path).run("DELETE FROM entry_times WHERE entry_kind <> 'root'")
            }
            guard let after = try store.tree.entry(for: ref) else { return }
            if let modified, after.modifiedNanoseconds != modified {
                violation(
                    "\(device.name): touch set \(ref)'s mtime to \(modified), it shows \(after.modifiedNanoseconds)")
            }
            if let accessed, after.accessedNanoseconds != accessed {
                violation(
                    "\(device.name): touch set \(ref)'s atime to \(accessed), it shows \(after.accessedNanoseconds)")
            }
            if accessed == nil, modified != nil, after.accessedNanoseconds != before.accessedNanoseconds {
                violation("\(device.name): touch -m moved \(ref)'s atime")
            }
            checkChangedForward(device, ref, shown: after.changedNanoseconds, after: "touch")
        }
        if try outboxRows(device) != outboxBefore {
            violation("\(device.name): touching \(ref) queued a sync change")
        }
    }

    /// Records `shown` as `ref`'s ctime on `device`; a violation when it is
    /// before one shown earlier.
    private func checkChangedForward(_ device: SimDevice, _ ref: EntryRef, shown: Int64, after what: String) {
        let seen = timesState.changedSeen[device.index]?[ref]
        if let seen, shown < seen {
            violation("\(device.name): \(ref)'s ctime went back after \(what): \(seen) -> \(shown)")
        }
        timesState.changedSeen[device.index, default: [:]][ref] = max(shown, seen ?? shown)
    }

    private func outboxRows(_ device: SimDevice) throws -> [String] {
        try device.reader.query("SELECT change_id || ':' || op || ':' || state FROM outbox ORDER BY seq") {
            $0.string(0)
        }
    }
}
