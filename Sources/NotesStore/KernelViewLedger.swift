import Foundation
import NotesModel
import Synchronization

/// What the kernel (and so every program writing through it) may still
/// believe about notes whose text changed behind its back: a pull, a merge
/// after a conflict, a resync. Each such change gets a number from one counter
/// and keeps the text it replaced, so a later write made through an older
/// view can be merged three-way against what its writer saw instead of
/// overwriting text it never saw.
///
/// The mount reads `generation` before it tells the kernel a note's size
/// (lookup, getattr, create, setattr, readdirplus) and hands that number back
/// with each write. Memory is bounded: replaced text beyond `bytesMax` is
/// forgotten oldest first (a write through such a view then applies as it is,
/// and the log says so).
final class KernelViewLedger: Sendable {
    /// Replaced text kept at most, over all notes.
    static let bytesMax = 64 << 20
    /// Changes kept per note; a kernel view older than all of them is treated as the oldest.
    static let changesPerNoteMax = 8
    /// A writer whose last write is older than this has finished its save:
    /// its next write starts afresh.
    static let sessionQuietNanoseconds: Int64 = 1_000_000_000

    struct Change {
        var generation: UInt64
        var replaced: Data
    }

    /// A writer that began writing through a stale view, and what it has written so far.
    struct Session {
        /// The text the writer saw (before the change it did not see).
        var view: Data
        /// The text the writer has made of `view` with its writes.
        var writer: Data
        /// The note's text when the writer began (with the change it did not see).
        var remote: Data
        var lastWriteNanoseconds: Int64
        /// Where the writer's last write ended (or its truncation cut): a save
        /// writes on from there, or starts over at 0.
        var writtenEnd: Int = 0
        /// The note's body as this session last stored it (nil before its first write).
        var stored: Data? = nil
        /// What this session put into the note's conflict copy, should the merge fail.
        var copy: CopyContribution? = nil
    }

    /// A stale save's text in the note's conflict copy (one copy per note and
    /// device, which may hold earlier clashes too): what the copy held before,
    /// what the session stored in it, and the writer's text it kept.
    struct CopyContribution {
        var before: Data?
        var stored: Data
        var writer: Data
    }

    private struct State {
        var generation: UInt64 = 0
        var changes: [NoteID: [Change]] = [:]
        /// (note, generation) in the order kept, for forgetting oldest first.
        var order: [(NoteID, UInt64)] = []
        var orderStart = 0
        var bytes = 0
        /// The newest change forgotten per note: a view older than it cannot be judged.
        var forgottenThrough: [NoteID: UInt64] = [:]
        var sessions: [NoteID: Session] = [:]
    }

    private let state = Mutex(State())

    /// The counter's current value: a view taken now has seen every change so far.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Records that `id`'s text was replaced behind the kernel's back; `replaced` is the old text.
    func recordChange(of id: NoteID, replaced: Data) {
        state.withLock { state in
            state.generation += 1
            var list = state.changes[id] ?? []
            list.append(Change(generation: state.generation, replaced: replaced))
            if list.count > Self.changesPerNoteMax {
                let dropped = list.removeFirst()
                state.bytes -= dropped.replaced.count
                state.forgottenThrough[id] = dropped.generation
            }
            state.changes[id] = list
            state.bytes += replaced.count
            state.order.append((id, state.generation))
            while state.bytes > Self.bytesMax, state.orderStart < state.order.count {
                let (oldID, oldGeneration) = state.order[state.orderStart]
                state.orderStart += 1
                guard var kept = state.changes[oldID], let index = kept.firstIndex(where: { $0.generation == oldGeneration })
                else { continue }
                state.bytes -= kept.remove(at: index).replaced.count
                state.changes[oldID] = kept.isEmpty ? nil : kept
                state.forgottenThrough[oldID] = max(state.forgottenThrough[oldID] ?? 0, oldGeneration)
            }
            if state.orderStart > 4_096 && state.orderStart * 2 > state.order.count {
                state.order.removeFirst(state.orderStart)
                state.orderStart = 0
            }
        }
    }

    /// What a write through a view taken at `view` must be judged against.
    enum Judgement {
        /// The view is current: apply the write as it is.
        case current
        /// The writer saw `seen`, which a later change replaced.
        case stale(seen: Data)
        /// The view is older than what is kept: apply as it is (logged).
        case forgotten
    }

    func judge(_ id: NoteID, view: UInt64) -> Judgement {
        state.withLock { state in
            if let forgotten = state.forgottenThrough[id], forgotten > view { return .forgotten }
            // The first change after the view replaced the text the writer saw.
            guard let first = state.changes[id]?.first(where: { $0.generation > view }) else { return .current }
            return .stale(seen: first.replaced)
        }
    }

    /// The texts that changes after `view` replaced, oldest first (the first
    /// is what `judge` hands back as seen).
    func textsReplaced(since view: UInt64, of id: NoteID) -> [Data] {
        state.withLock { state in
            (state.changes[id] ?? []).filter { $0.generation > view }.map(\.replaced)
        }
    }

    /// The kernel's view of `id` is current again (a write through a current view):
    /// the kept text is of no more use.
    func forget(_ id: NoteID) {
        state.withLock { state in
            state.forgottenThrough[id] = nil
            guard let list = state.changes.removeValue(forKey: id) else { return }
            state.bytes -= list.reduce(0) { $0 + $1.replaced.count }
        }
    }

    /// The session of a writer still writing through a stale view of `id`.
    func session(of id: NoteID, now: Int64) -> Session? {
        state.withLock { state in
            guard let session = state.sessions[id] else { return nil }
            if now - session.lastWriteNanoseconds > Self.sessionQuietNanoseconds {
                state.sessions[id] = nil
                return nil
            }
            return session
        }
    }

    func setSession(_ session: Session?, of id: NoteID) {
        state.withLock { $0.sessions[id] = session }
    }
}
