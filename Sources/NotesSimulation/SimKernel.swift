import Foundation
import FuseKit
import NotesFS
import NotesModel
import NotesStore

/// The Linux FUSE client of one device, as far as it decides where a write
/// lands, in front of that device's real `NotesFileSystem` (no FUSE session).
///
/// What it keeps, per inode: the size (`i_size`) learned from lookup,
/// getattr and setattr replies and grown by its own writes
/// (`max(size, offset + count)`); whether those attributes are valid (10 s
/// from a reply, dropped by an `inval_inode` notification and by the
/// kernel's own write); the file's pages (dropped by an invalidation, or by
/// a reply that shows a new size or mtime: `auto_inval_data`). Per name: the
/// dentry, valid 10 s, dropped by an `inval_entry`. The mount's
/// notifications reach it at a random later step, so stale windows exist.
///
/// What it does, as Linux does: an `O_APPEND` write takes its offset from the
/// cached size without asking (`generic_write_checks`); `fstat` and reads
/// ask only when the attributes are invalid or expired; a reply that an
/// invalidation overtook is discarded (the `attr_version` check), though the
/// mount has already counted it as learned. With the mount's default no open
/// or release is sent (handle 0); the descriptor's flags travel with each write.
///
/// `@unchecked Sendable`: the world drives it from its one task; its store
/// observer runs on commits made by that task or by the device's engine
/// while the task waits for it, never concurrently with the kernel's own calls.
final class SimKernel: @unchecked Sendable {
    /// The mount's attribute timeout (its replies to getattr and setattr carry it).
    static let attributeSeconds: Int64 = 10

    struct Inode {
        /// What the store said the number stands for when it was looked up (bookkeeping only).
        var ref: EntryRef?
        var size: Int64 = 0
        var modified: Int64 = 0
        /// Simulated nanoseconds until which the attributes are valid; 0 = invalid.
        var attributesValidUntil: Int64 = 0
        /// The whole file as the kernel cached it, nil when nothing is cached.
        var pages: Data?
        var lookups: UInt64 = 0
        /// The view generation of the reply the kernel last took (what its size is as of).
        var knowledge: UInt64 = 0
        /// The mount's view of this inode: the newest reply it sent, taken or not.
        var mountView: UInt64 = 0
        /// The oldest `mountView` the mount served a read through since the kernel last wrote.
        var mountReadView: UInt64?
    }

    struct EntryKey: Hashable {
        var parent: UInt64
        var name: String
    }

    /// What a program holding a descriptor means to do with it at its `due` step.
    enum Plan {
        /// `>>`: one line, wherever the kernel puts an `O_APPEND` write.
        case append
        /// A write of one line at the end its program learned with `fstat`.
        case writeAt(Int64)
        /// `fstat` at its step (not at the open), then one line at that end.
        case writeAtEndAskedLate
        /// Truncate, then write back `seen` (what it read) edited.
        case rewrite(seen: Data)
        /// Write `seen` edited into a new temp file and rename it over the
        /// note: an editor's atomic save of what it read.
        case atomicSave(seen: Data)
    }

    struct Descriptor {
        var inode: UInt64
        var flags: OpenFlags
        /// 0 when opens are skipped.
        var handle: UInt64
        /// The view generation the mount read at the open request (with open requests).
        var handleView: UInt64
        /// The entries it may stand for: what the store maps its number to,
        /// and the note its program meant (the store re-points numbers the
        /// mount still holds, as after a rename-over or a revival).
        var refs: Set<EntryRef>
        var plan: Plan
        var due: Int
        var name: String
        /// The view generation of what its program learned (the size it was
        /// told, the text it read): its offsets and text are as of then.
        var knowledge: UInt64 = 0
        /// With open requests: the oldest `mountView` the mount served a read
        /// through this descriptor's handle since it last wrote.
        var mountReadView: UInt64?
        /// Another program on this machine changed the note since: an ordinary
        /// race between two local programs, which no promise covers.
        var overtakenLocally = false
    }

    unowned let world: SimWorld
    let deviceIndex: Int
    let store: NotesStore
    let mount: UnmountedFileSystem
    let opensSkipped: Bool
    var inodes: [UInt64: Inode] = [1: Inode(ref: .root)]
    private var entries: [EntryKey: (inode: UInt64, validUntil: Int64)] = [:]
    var descriptors: [Int: Descriptor] = [:]
    var nextDescriptor = 1
    /// Notifications the mount queued, each with the step it reaches the kernel.
    private var notifications: [(due: Int, item: Invalidation)] = []
    /// Inodes whose size another local program changed (read from the store before next use).
    private var sizeChangedLocally = Set<UInt64>()
    /// The view generation after each pulled change, per entry (for `isInKnownGap`).
    var pulledChanges: [EntryRef: [UInt64]] = [:]
    private var inRequest = false
    private var observerID = 0

    init(world: SimWorld, device: SimDevice, opensSkipped: Bool) {
        self.world = world
        deviceIndex = device.index
        store = device.store
        self.opensSkipped = opensSkipped
        mount = UnmountedFileSystem(tree: device.store.tree, skipsOpens: opensSkipped)
        observerID = store.tree.addObserver { [unowned self] commit in
            guard !self.inRequest else { return }
            self.changedBehindTheKernel(commit)
        }
    }

    func close() {
        store.tree.removeObserver(observerID)
        mount.close()
    }

    private var now: Int64 { world.time.now }

    // MARK: Requests and notifications

    /// One request to the mount, marked as the kernel's own; afterwards the
    /// notifications it queued are picked up.
    func request<T>(
        changingNamesIn directories: [UInt64] = [], _ body: (any FileSystemOperations) throws -> T
    ) throws -> T {
        inRequest = true
        defer {
            inRequest = false
            collectNotifications()
        }
        return try mount.request(changingNamesIn: directories, body)
    }

    /// Takes what the mount queued; each reaches the kernel 0–2 steps later.
    func collectNotifications() {
        // The mount lists a commit's invalidations in the order of a `Set`,
        // which Swift seeds afresh in every process: sorted, each draws the
        // same delay in every replay of the seed.
        for item in mount.takeInvalidations().sorted(by: Self.replayOrder) {
            notifications.append((world.step + world.random.int(0...2), item))
        }
    }

    /// A fixed order of invalidations: inodes by number, then entries by directory and name.
    static func replayOrder(_ a: Invalidation, _ b: Invalidation) -> Bool {
        switch (a, b) {
        case (.inode(let x), .inode(let y)): x < y
        case (.inode, .entry): true
        case (.entry, .inode): false
        case (.entry(let p, let m), .entry(let q, let n)): (p, m) < (q, n)
        }
    }

    /// Delivers the notifications due by now, oldest first. Before that, a
    /// background `stat` (a shell prompt, a file manager) may ask for the
    /// attributes of an inode whose invalidation is on its way: the race in
    /// which the kernel drops the reply.
    func deliverDueNotifications() {
        collectNotifications()
        var racing: [UInt64] = []
        for (_, item) in notifications {
            guard case .inode(let number) = item, case .note? = inodes[number]?.ref, !racing.contains(number) else {
                continue
            }
            racing.append(number)
        }
        for number in racing {
            // Most often where a program holds the file open (its shell, its editor).
            let held = descriptors.values.contains { $0.inode == number }
            guard world.random.chance(held ? 0.8 : 0.2) else { continue }
            let generation = store.tree.kernelViewGeneration
            guard let attributes = try? request({ try $0.getAttributes(inode: number, handle: nil).attributes }) else { continue }
            learn(attributes, generation: generation, validSeconds: Self.attributeSeconds, mayBeOvertaken: true)
        }
        let due = notifications.filter { $0.due <= world.step }
        guard !due.isEmpty else { return }
        notifications.removeAll { $0.due <= world.step }
        for (_, item) in due { deliver(item) }
    }

    /// Delivers every queued notification now (time enough has passed for
    /// the invalidation thread), with no background `stat` racing them.
    func deliverAllNotifications() {
        collectNotifications()
        let pending = notifications
        notifications = []
        for (_, item) in pending { deliver(item) }
    }

    private func deliver(_ item: Invalidation) {
        switch item {
        case .inode(let inode):
            // fuse_reverse_inval_inode: attributes invalid, pages dropped.
            inodes[inode]?.attributesValidUntil = 0
            inodes[inode]?.pages = nil
        case .entry(let parent, let name):
            entries[EntryKey(parent: parent, name: name)] = nil
        }
    }

    /// A commit the kernel did not make. Another local program's writes go
    /// through this same kernel (its sizes and names stay right), so only
    /// pulled changes leave the kernel stale; descriptors learn which kind touched their note.
    private func changedBehindTheKernel(_ commit: StoreCommit) {
        let changed = commit.changedEntries
        guard commit.origin == .local else {
            let generation = store.tree.kernelViewGeneration
            // Sorted: a set's order differs between processes, and a replayed trace must not.
            let held = changed.filter { ref in descriptors.values.contains { $0.refs.contains(ref) } }
            for ref in held.sorted(by: { $0.description < $1.description }) {
                pulledChanges[ref, default: []].append(generation)
                world.trace("  kernel: \(ref) changed behind open descriptors (view generation \(generation))")
            }
            return
        }
        for (number, descriptor) in descriptors where !descriptor.refs.isDisjoint(with: changed) {
            // An append lands at the end whatever else was written.
            if case .append = descriptor.plan { continue }
            descriptors[number]?.overtakenLocally = true
        }
        for (number, inode) in inodes where inode.ref.map(changed.contains) == true {
            inodes[number]?.attributesValidUntil = 0
            inodes[number]?.pages = nil
            sizeChangedLocally.insert(number)
        }
        if !commit.addedNames.isEmpty || !commit.removedNames.isEmpty { entries.removeAll() }
    }

    // MARK: What the kernel learns

    /// A reply carrying `attributes` for `inode`, built after the mount read
    /// `generation`. The mount has already recorded it as learned; the kernel
    /// may still discard it when an invalidation of the inode overtakes it
    /// (the `attr_version` check).
    func learn(
        _ attributes: FileAttributes, generation: UInt64, validSeconds: Int64, mayBeOvertaken: Bool = false
    ) {
        let number = attributes.inode
        var seen = inodes[number] ?? Inode()
        seen.mountView = max(seen.mountView, generation)
        inodes[number] = seen
        if mayBeOvertaken, let racing = notifications.firstIndex(where: { $0.item == .inode(number) }),
            world.random.chance(0.5)
        {
            world.count(.kernelReplyOvertaken)
            world.trace("  kernel: inval_inode \(number) overtakes the reply; size stays \(inodes[number]?.size ?? -1)")
            let item = notifications.remove(at: racing).item
            deliver(item)
            return
        }
        var inode = inodes[number] ?? Inode()
        let size = Int64(attributes.size)
        if inode.size != size || inode.modified != attributes.modificationTimeNanoseconds { inode.pages = nil }
        inode.size = size
        inode.modified = attributes.modificationTimeNanoseconds
        inode.attributesValidUntil = now + validSeconds * 1_000_000_000
        inode.knowledge = max(inode.knowledge, generation)
        inodes[number] = inode
        sizeChangedLocally.remove(number)
    }

    /// Walks `path` from the root, asking the mount only for names whose dentry is missing or expired.
    func resolve(_ path: [String]) throws -> UInt64 {
        var parent: UInt64 = 1
        for name in path {
            let key = EntryKey(parent: parent, name: name)
            if let cached = entries[key], cached.validUntil > now, inodes[cached.inode] != nil {
                parent = cached.inode
                continue
            }
            let generation = store.tree.kernelViewGeneration
            let reply = try request { try $0.lookup(parent: parent, name: name) }
            let number = reply.attributes.inode
            guard number != 0 else { throw FileSystemError.notFound }
            entries[key] = (number, now + Int64(reply.entryTimeoutSeconds * 1e9))
            if inodes[number] == nil { inodes[number] = Inode() }
            inodes[number]?.lookups += 1
            inodes[number]?.ref = try? store.tree.entryRef(forInode: number)
            // Only lookups and background stats are modelled as overtaken: a
            // program's own fstat or read then finds the attributes invalid and
            // asks again, so only an append (which never asks) meets the stale size.
            learn(
                reply.attributes, generation: generation, validSeconds: Int64(reply.attributeTimeoutSeconds),
                mayBeOvertaken: true)
            parent = number
        }
        return parent
    }

    /// `open(path, O_WRONLY | O_CREAT | O_EXCL)`: a create request; the new
    /// file's descriptor (close it with `close`).
    func create(_ path: [String]) throws -> Int {
        guard let name = path.last else { throw FileSystemError.invalid }
        let parent = try resolve(Array(path.dropLast()))
        let generation = store.tree.kernelViewGeneration
        let flags = OpenFlags(rawValue: O_WRONLY | O_CREAT | O_EXCL)
        let context = RequestContext(uid: 0, gid: 0, pid: 1, umask: 0o022)
        let (entry, reply) = try request(changingNamesIn: [parent]) {
            try $0.create(parent: parent, name: name, mode: 0o100644, flags: flags, context: context)
        }
        let number = entry.attributes.inode
        entries[EntryKey(parent: parent, name: name)] = (number, now + Int64(entry.entryTimeoutSeconds * 1e9))
        if inodes[number] == nil { inodes[number] = Inode() }
        inodes[number]?.lookups += 1
        let ref = try? store.tree.entryRef(forInode: number)
        inodes[number]?.ref = ref
        inodes[number]?.pages = Data()
        learn(entry.attributes, generation: generation, validSeconds: Int64(entry.attributeTimeoutSeconds))
        let descriptor = nextDescriptor
        nextDescriptor += 1
        descriptors[descriptor] = Descriptor(
            inode: number, flags: flags, handle: reply.handle, handleView: generation,
            refs: Set(ref.map { [$0] } ?? []), plan: .append, due: Int.max, name: path.joined(separator: "/"))
        return descriptor
    }

    /// `rename(from, to)`, both names looked up first as the kernel's walks
    /// do. The kernel moves the source's inode to the new name; a program
    /// holding the file it replaced lost an ordinary local race.
    func rename(_ from: [String], to target: [String]) throws {
        guard let name = from.last, let newName = target.last else { throw FileSystemError.invalid }
        let parent = try resolve(Array(from.dropLast()))
        let newParent = try resolve(Array(target.dropLast()))
        let source = try resolve(from)
        let replaced = try? resolve(target)
        let replacedRef = replaced.flatMap { inodes[$0]?.ref }
        try request(changingNamesIn: [parent, newParent]) {
            try $0.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: RenameFlags(rawValue: 0))
        }
        entries[EntryKey(parent: parent, name: name)] = nil
        entries[EntryKey(parent: newParent, name: newName)] = (source, now + Self.attributeSeconds * 1_000_000_000)
        inodes[source]?.ref = try? store.tree.entryRef(forInode: source)
        for (number, other) in descriptors
        where (replaced != nil && other.inode == replaced) || replacedRef.map(other.refs.contains) == true {
            descriptors[number]?.overtakenLocally = true
        }
    }

    /// Another local program wrote the file through this same kernel since:
    /// the kernel knows the size that program left.
    func takeLocalSize(_ number: UInt64) throws {
        guard sizeChangedLocally.contains(number) else { return }
        sizeChangedLocally.remove(number)
        if let ref = inodes[number]?.ref, let entry = try store.tree.entry(for: ref) {
            inodes[number]?.size = entry.size
        }
    }

    /// Asks for the attributes when they are invalid or expired (fstat,
    /// lseek SEEK_END, read). Returns the view generation of the size now cached.
    @discardableResult
    func refreshAttributes(_ number: UInt64, handle: UInt64) throws -> UInt64 {
        try takeLocalSize(number)
        guard let inode = inodes[number] else { throw FileSystemError.badHandle }
        guard inode.attributesValidUntil <= now else { return inode.knowledge }
        let generation = store.tree.kernelViewGeneration
        let attributes = try request { try $0.getAttributes(inode: number, handle: handle == 0 ? nil : handle).attributes }
        learn(attributes, generation: generation, validSeconds: Self.attributeSeconds)
        return generation
    }
}
