import Dispatch
import SQLiteKit
import Synchronization

/// Runs the history's and the trash's pruning on a queue of its own, off
/// every save: a save that keeps a copy past the cap, or a deletion while
/// the trash holds an entry past its age, only asks for a run. Each step is its own
/// short transaction on the store's connection, so a save waits at most one
/// step (see `NotesStore.pruneHistoryStep`).
final class HistoryPruner: Sendable {
    private let queue = DispatchQueue(label: "notesfs.history-prune", qos: .utility)
    private let scheduled = Mutex(false)
    private let work = Mutex<(@Sendable () -> Void)?>(nil)

    /// Sets what a run does (the store, held weakly by the caller).
    func attach(_ run: @escaping @Sendable () -> Void) {
        work.withLock { $0 = run }
    }

    /// Asks for a run soon; a run already asked for and not started covers this one.
    func schedule() {
        let first = scheduled.withLock { scheduled in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else { return }
        queue.async { [self] in
            scheduled.withLock { $0 = false }
            work.withLock { $0 }?()
        }
    }

    /// Waits until the runs asked for so far are done (tests).
    func waitUntilIdle() {
        queue.sync {}
    }
}

/// What one pruning step did.
enum HistoryPruneStep: Equatable, Sendable {
    /// Dropped entries past their age or past the size cap, oldest first.
    case deleted(entries: Int, bytes: Int64)
    /// Forgot notes in the trash past its age, oldest first.
    case forgotTrash(entries: Int)
    /// Gave free pages back to the file system (`incremental_vacuum`).
    case vacuumed(pages: Int)
    /// Nothing to do.
    case idle
}

extension NotesStore {
    /// A step deletes at most this many entries…
    static let pruneStepEntriesMax = 64
    /// …and stops once it freed this many bytes (a larger entry still goes alone).
    static let pruneStepBytesMax: Int64 = 8 << 20
    /// A vacuum step gives back at most this many pages (256 KiB at 4 KiB):
    /// each live page at the file's end is copied into a free one, and 512
    /// pages of kept history took 30–85 ms a step (debug build), 64 take a
    /// few.
    static let vacuumStepPages = 64
    /// Free pages up to this many, or up to an eighth of the file, are left
    /// for the next writes to reuse: at the cap, each save's copy takes the
    /// space the last pruned one left, and giving it back would move the
    /// newest entries down the file on every save.
    static let vacuumFreePagesMin = 256
    static let vacuumFreeFractionDivisor = 8
    /// A run stops after this many steps; the next save past the cap starts another.
    static let pruneRunStepsMax = 100_000

    /// One bounded step of pruning: history entries past the retention age
    /// or past the size cap (by the running total), oldest first; when none,
    /// trash entries past their age; when none, free pages given back to the
    /// file system. Each is one short transaction.
    func pruneHistoryStep() throws(StoreError) -> HistoryPruneStep {
        let (entries, bytes) = try write(origin: .local, checkSpace: false) { db, _ -> (Int, Int64) in
            var total = try db.queryOne("SELECT bytes FROM history_total WHERE id = 1") { $0.int64(0) } ?? 0
            let cutoff = now - configuration.historyRetentionNanoseconds
            let oldest = try db.query(
                "SELECT seq, size, saved_ns FROM history INDEXED BY history_listing ORDER BY seq LIMIT ?",
                Self.pruneStepEntriesMax
            ) { ($0.int64(0), $0.int64(1), $0.int64(2)) }
            var entries = 0
            var bytes: Int64 = 0
            // Entries are added in time order, so the oldest come first by
            // seq: the age test stops at the first young one. A clock set
            // back only keeps entries longer, never shorter.
            for (seq, size, saved) in oldest {
                guard saved < cutoff || total > configuration.historyMaxBytes, bytes < Self.pruneStepBytesMax
                else { break }
                try db.run("DELETE FROM history WHERE seq = ?", seq)
                total -= size
                bytes += size
                entries += 1
            }
            return (entries, bytes)
        }
        if entries > 0 { return .deleted(entries: entries, bytes: bytes) }
        let forgotten = try pruneTrashStep()
        if forgotten > 0 { return .forgotTrash(entries: forgotten) }
        guard incrementalVacuum else { return .idle }
        let freed = try write(origin: .local, checkSpace: false) { db, _ -> Int in
            let before = try db.queryOne("PRAGMA freelist_count") { $0.int(0) } ?? 0
            let pages = try db.queryOne("PRAGMA page_count") { $0.int(0) } ?? 0
            guard before > max(Self.vacuumFreePagesMin, pages / Self.vacuumFreeFractionDivisor) else { return 0 }
            try db.execute("PRAGMA incremental_vacuum(\(Self.vacuumStepPages))")
            let after = try db.queryOne("PRAGMA freelist_count") { $0.int(0) } ?? 0
            return before - after
        }
        return freed > 0 ? .vacuumed(pages: freed) : .idle
    }

    /// Prunes step by step until nothing is left to do, then checkpoints the
    /// log if pages were given back: the database file only shrinks when the
    /// log's last frames are copied into it. The connection is free between
    /// steps, so saves go on meanwhile.
    func pruneHistory() throws(StoreError) {
        var vacuumed = false
        for _ in 0..<Self.pruneRunStepsMax {
            switch try pruneHistoryStep() {
            case .deleted, .forgotTrash: continue
            case .vacuumed: vacuumed = true
            case .idle:
                // Passive: it never waits for a reader; a checkpoint it could
                // not finish is finished by a later one.
                if vacuumed { _ = try StoreError.wrap { try queue.sync { db in try db.checkpointPassively() } } }
                return
            }
        }
    }

    /// Waits for the pruning runs asked for so far (tests).
    func waitForHistoryPruning() {
        historyPruner.waitUntilIdle()
    }
}
