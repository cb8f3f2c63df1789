import Foundation
import NotesStore
import Synchronization

/// The inodes the kernel currently knows, with their lookup counts.
///
/// Numbers come from the store's never-reused counter (`NotesStore.inode(for:)`);
/// this table only remembers, in memory, which entry each number the kernel
/// holds stands for and how many lookups the kernel has not yet forgotten.
/// An inode whose entry went away (unlinked, or replaced by a rename-over)
/// stays here *detached* until the kernel forgets it.
final class InodeTable: Sendable {
    struct Node {
        /// The entry, or nil once detached.
        var ref: EntryRef?
        var lookups: UInt64
        /// True once the kernel opened it and nothing changed it behind the
        /// kernel's back since: the pages (or, for a directory, the listing)
        /// the kernel cached are current. Changes made through the kernel keep
        /// its caches right (no writeback cache: writes go through the page
        /// cache to us); every other change clears this flag and is
        /// invalidated explicitly.
        var cacheTrusted = false
        /// The store's `kernelViewGeneration` as of the last time the kernel
        /// learned this file's size: writes are judged against it.
        var view: UInt64 = 0
        /// The oldest `view` a read of this file was served through since
        /// the kernel last wrote it: a program may hold text that old, even
        /// after a later reply told the kernel a newer size.
        var readView: UInt64?
    }

    private struct State {
        /// Kept small (no bytes in it): a walk touches one node per listed
        /// entry, and a table of 10,000 nodes is read in random order.
        var nodes: [UInt64: Node] = [1: Node(ref: .root, lookups: 1)]
        var inodeOfRef: [EntryRef: UInt64] = [.root: 1]
        /// The bytes of detached inodes (unlinked, or replaced by a
        /// rename-over) while the kernel still holds them: descriptors open
        /// on them read and write these, never the store. Dropped on forget.
        var snapshots: [UInt64: HandleTable.Snapshot] = [:]
    }

    private let state = Mutex(State())

    /// The entry `inode` stands for; nil when unknown or detached.
    func ref(for inode: UInt64) -> EntryRef? {
        state.withLock { $0.nodes[inode]?.ref }
    }

    /// True when the kernel holds `inode` (attached or detached).
    func isKnown(_ inode: UInt64) -> Bool {
        state.withLock { $0.nodes[inode] != nil }
    }

    /// The inode the kernel knows for `ref`, if any.
    func inode(for ref: EntryRef) -> UInt64? {
        state.withLock { $0.inodeOfRef[ref] }
    }

    /// Records that the kernel received `inode` for `ref` once more (lookup,
    /// create, mkdir, symlink, readdirplus). Rebinds the number when it was
    /// re-pointed (rename-over) and detaches an older number of `ref`.
    func lookedUp(_ inode: UInt64, ref: EntryRef, view: UInt64) {
        state.withLock { state in Self.lookedUp(&state, inode, ref: ref, view: view) }
    }

    /// One lookup counted. An inode already bound to `ref` (every lookup
    /// but the first, and every entry of a listing walked again) costs one
    /// hash probe: bind would change nothing, since a node's ref always maps
    /// back to that node.
    private static func lookedUp(_ state: inout State, _ inode: UInt64, ref: EntryRef, view: UInt64) {
        if let index = state.nodes.index(forKey: inode), state.nodes.values[index].ref == ref {
            state.nodes.values[index].lookups += 1
            state.nodes.values[index].learned(view)
            return
        }
        bind(&state, inode, ref)
        state.nodes[inode, default: Node(ref: ref, lookups: 0)].lookups += 1
        state.nodes[inode]?.learned(view)
    }

    /// The inodes to hand out for a listing's entries, position by position:
    /// the one the kernel knows for the entry, else the store's (`stored`),
    /// nil when neither exists. An entry already bound to its stored number
    /// (every entry of a tree walked again) costs one probe of the nodes,
    /// which counting its lookup then finds in the cache.
    func inodes(for entries: [(ref: EntryRef, stored: UInt64?)]) -> [UInt64?] {
        state.withLock { state in
            entries.map { entry in
                if let stored = entry.stored, state.nodes[stored]?.ref == entry.ref { return stored }
                return state.inodeOfRef[entry.ref] ?? entry.stored
            }
        }
    }

    /// `lookedUp` for every pair, under one lock (readdirplus).
    func lookedUp(_ pairs: [(inode: UInt64, ref: EntryRef)], view: UInt64) {
        guard !pairs.isEmpty else { return }
        state.withLock { state in
            for (inode, ref) in pairs { Self.lookedUp(&state, inode, ref: ref, view: view) }
        }
    }

    /// The kernel learned `inode`'s size (getattr, setattr) as of `view`.
    func learned(_ inode: UInt64, view: UInt64) {
        state.withLock { $0.nodes[inode]?.learned(view) }
    }

    /// What the kernel last learned of `inode`; nil when it holds no such inode.
    func view(of inode: UInt64) -> UInt64? {
        state.withLock { $0.nodes[inode]?.view }
    }

    /// The view a read of `inode` is served through (what the kernel last
    /// learned), remembered as one a program may still hold when it writes.
    func viewForRead(of inode: UInt64) -> UInt64? {
        state.withLock { state in
            guard var node = state.nodes[inode] else { return nil }
            node.readView = min(node.readView ?? node.view, node.view)
            state.nodes[inode] = node
            return node.view
        }
    }

    /// The view a write to `inode` is judged by. A rewrite (a truncation, or
    /// a write at offset 0) takes the oldest of what the kernel last learned
    /// and what reads were served through since it last wrote: it replaces
    /// the text from its start, so a view older than its writer's only costs
    /// a merge with changes both sides have. A write at a later offset takes
    /// what the kernel learned: another program's earlier read says nothing
    /// of the text this writer's offset points into, and splicing the bytes
    /// into that older text would put them in the wrong place. The next
    /// write starts afresh (a save through a stale view carries its own view
    /// from its first write on).
    func viewForWrite(of inode: UInt64, rewrite: Bool) -> UInt64? {
        state.withLock { state in
            guard var node = state.nodes[inode] else { return nil }
            let view = rewrite ? min(node.readView ?? node.view, node.view) : node.view
            node.readView = nil
            state.nodes[inode] = node
            return view
        }
    }

    /// Binds `inode` to `ref` without counting a lookup (after a rename, the
    /// kernel moves its existing inode to the new name).
    func rebind(_ inode: UInt64, to ref: EntryRef) {
        state.withLock { state in
            guard state.nodes[inode] != nil else { return }
            Self.bind(&state, inode, ref)
        }
    }

    private static func bind(_ state: inout State, _ inode: UInt64, _ ref: EntryRef) {
        if let old = state.nodes[inode]?.ref, old != ref, state.inodeOfRef[old] == inode {
            state.inodeOfRef[old] = nil
        }
        if let previous = state.inodeOfRef[ref], previous != inode {
            state.nodes[previous]?.ref = nil
        }
        state.inodeOfRef[ref] = inode
        state.nodes[inode]?.ref = ref
    }

    /// The entry of `inode` went away; the kernel may still hold the number.
    func detach(_ inode: UInt64) {
        state.withLock { state in
            if let ref = state.nodes[inode]?.ref, state.inodeOfRef[ref] == inode {
                state.inodeOfRef[ref] = nil
            }
            state.nodes[inode]?.ref = nil
        }
    }

    /// The kernel forgot `count` lookups of `inode`. Returns false when the
    /// kernel forgot more than it was given (a bug somewhere; logged by the caller).
    @discardableResult
    func forget(_ inode: UInt64, count: UInt64) -> Bool {
        guard inode != 1 else { return true }
        return state.withLock { state in
            guard var node = state.nodes[inode] else { return false }
            let consistent = node.lookups >= count
            node.lookups = consistent ? node.lookups - count : 0
            if node.lookups == 0 {
                state.nodes[inode] = nil
                state.snapshots[inode] = nil
                if let ref = node.ref, state.inodeOfRef[ref] == inode { state.inodeOfRef[ref] = nil }
            } else {
                state.nodes[inode] = node
            }
            return consistent
        }
    }

    /// Records that the kernel opened `inode` and now caches what it reads
    /// from it; returns true when its earlier cache is still current (so the
    /// kernel may keep its pages or listing).
    func noteOpened(_ inode: UInt64) -> Bool {
        state.withLock { state in
            guard state.nodes[inode] != nil else { return false }
            let trusted = state.nodes[inode]?.cacheTrusted ?? false
            state.nodes[inode]?.cacheTrusted = true
            return trusted
        }
    }

    /// The kernel's cache of `inode` is stale (changed behind its back).
    func distrustCache(_ inode: UInt64) {
        state.withLock { $0.nodes[inode]?.cacheTrusted = false }
    }

    /// Keeps `snapshot` as the bytes of `inode` (about to be detached).
    /// Returns false when the kernel does not hold `inode`.
    @discardableResult
    func setSnapshot(_ inode: UInt64, _ snapshot: HandleTable.Snapshot) -> Bool {
        state.withLock { state in
            guard state.nodes[inode] != nil else { return false }
            state.snapshots[inode] = snapshot
            return true
        }
    }

    /// Drops kept bytes of an inode that was not detached after all (the
    /// unlink or rename failed).
    func clearSnapshot(_ inode: UInt64) {
        state.withLock { state in
            if state.nodes[inode]?.ref != nil { state.snapshots[inode] = nil }
        }
    }

    /// The kept bytes of a detached inode, if any.
    func snapshot(of inode: UInt64) -> HandleTable.Snapshot? {
        state.withLock { $0.snapshots[inode] }
    }

    /// Changes the kept bytes of a detached inode; nil when it has none.
    func updateSnapshot(_ inode: UInt64, _ change: (inout HandleTable.Snapshot) -> Void) -> HandleTable.Snapshot? {
        state.withLock { state in
            guard var snapshot = state.snapshots.removeValue(forKey: inode) else { return nil }
            change(&snapshot)
            state.snapshots[inode] = snapshot
            return snapshot
        }
    }

    /// Every inode the kernel holds that still stands for an entry.
    func attachedInodes() -> [UInt64] {
        state.withLock { state in state.nodes.compactMap { $0.value.ref == nil ? nil : $0.key } }
    }

    /// How many inodes the kernel holds (for status and tests).
    var count: Int { state.withLock { $0.nodes.count } }
}

extension InodeTable.Node {
    /// Views only move forward: a reply built from an older read never undoes a newer one.
    mutating func learned(_ newView: UInt64) {
        if newView > view { view = newView }
    }
}
