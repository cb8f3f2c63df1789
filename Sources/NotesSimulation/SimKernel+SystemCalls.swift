import Foundation
import FuseKit
import NotesFS
import NotesModel
import NotesStore

// The system calls a simulated program makes, as the kernel turns them into
// requests to the mount.
extension SimKernel {
    /// `open(path, flags)`; with opens skipped no request is sent. `intended`
    /// is the entry the program means (the store may no longer map a number
    /// the mount still holds, as after a note was revived).
    func open(_ path: [String], intended: EntryRef, flags: OpenFlags, plan: Plan, due: Int) throws -> Int {
        let number = try resolve(path)
        if case .note? = inodes[number]?.ref {} else { inodes[number]?.ref = intended }
        var handle: UInt64 = 0
        let handleView = store.tree.kernelViewGeneration
        if !opensSkipped {
            let reply = try request { try $0.open(inode: number, flags: flags) }
            handle = reply.handle
            if !reply.keepCache { inodes[number]?.pages = nil }
        }
        let descriptor = nextDescriptor
        nextDescriptor += 1
        descriptors[descriptor] = Descriptor(
            inode: number, flags: flags, handle: handle, handleView: handleView,
            refs: Set([intended] + (inodes[number]?.ref.map { [$0] } ?? [])), plan: plan,
            due: due, name: path.joined(separator: "/"))
        return descriptor
    }

    /// Runs `body`, closing `descriptor` when it throws (a program that
    /// meets an error closes what it opened).
    func closingOnError<T>(_ descriptor: Int, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            close(descriptor)
            throw error
        }
    }

    func close(_ descriptor: Int) {
        guard let open = descriptors.removeValue(forKey: descriptor) else { return }
        guard open.handle != 0 else { return }
        // No flush: the mount registers none, so the kernel sends only the release.
        _ = try? request { $0.release(inode: open.inode, handle: open.handle) }
    }

    /// `fstat`: the size the program is told.
    func size(_ descriptor: Int) throws -> Int64 {
        guard let open = descriptors[descriptor] else { throw FileSystemError.badHandle }
        descriptors[descriptor]?.knowledge = try refreshAttributes(open.inode, handle: open.handle)
        return inodes[open.inode]?.size ?? 0
    }

    /// `read` to the end of the file: at most the cached size, from the pages when cached.
    func readAll(_ descriptor: Int) throws -> Data {
        guard let open = descriptors[descriptor] else { throw FileSystemError.badHandle }
        descriptors[descriptor]?.knowledge = try refreshAttributes(open.inode, handle: open.handle)
        guard let inode = inodes[open.inode] else { throw FileSystemError.badHandle }
        var content = inode.pages ?? Data()
        if content.count > inode.size { content = content.prefix(Int(inode.size)) }
        if content.count < inode.size {
            let missing = Int(inode.size) - content.count
            let offset = Int64(content.count)
            inodes[open.inode]?.mountReadView = min(inode.mountReadView ?? inode.mountView, inode.mountView)
            if open.handle != 0 {
                descriptors[descriptor]?.mountReadView = min(open.mountReadView ?? inode.mountView, inode.mountView)
            }
            let read = try request { operations in
                if world.breakage == .readsIgnoreKernelView, let ref = inode.ref {
                    return try store.tree.read(ref, offset: offset, count: missing)
                }
                return try operations.read(inode: open.inode, handle: open.handle, offset: offset, count: missing)
            }
            content.append(read)
            // A short read: the kernel takes it as the end of the file.
            if read.count < missing { inodes[open.inode]?.size = Int64(content.count) }
        }
        inodes[open.inode]?.pages = content
        return content
    }

    /// Another program wrote through `descriptor`: programs holding other
    /// descriptors on the same file at remembered offsets lost an ordinary local race.
    private func overtakeOthers(than descriptor: Int, inode: UInt64) {
        for (number, other) in descriptors where number != descriptor && other.inode == inode {
            if case .append = other.plan { continue }
            descriptors[number]?.overtakenLocally = true
        }
    }

    /// `write`/`pwrite`: an `O_APPEND` descriptor writes at the cached size.
    /// Returns the offset the kernel sent.
    @discardableResult
    func write(_ descriptor: Int, at explicitOffset: Int64, bytes: Data) throws -> Int64 {
        guard let open = descriptors[descriptor] else { throw FileSystemError.badHandle }
        try takeLocalSize(open.inode)
        guard let inode = inodes[open.inode] else { throw FileSystemError.badHandle }
        let offset = open.flags.append ? inode.size : explicitOffset
        var flags = open.flags
        if world.breakage == .appendAtKernelOffset {
            flags = OpenFlags(rawValue: flags.rawValue & ~O_APPEND)
        }
        if world.breakage == .ignoreKernelView, let ref = inode.ref {
            _ = try request { _ in
                try store.tree.write(ref, offset: offset, bytes: bytes, append: flags.append, view: nil)
            }
        } else if world.breakage == .positionalWritesJudgedByReads, !flags.append, offset > 0, let ref = inode.ref {
            let views = (opensSkipped ? [] : [open.handleView, open.mountReadView].compactMap { $0 })
                + [inode.mountReadView ?? inode.mountView, inode.mountView]
            _ = try request { _ in
                try store.tree.write(ref, offset: offset, bytes: bytes, append: false, view: views.min())
            }
        } else {
            _ = try request { operations in
                try bytes.withUnsafeBytes { buffer in
                    try operations.write(
                        inode: open.inode, handle: open.handle, offset: offset, bytes: buffer, flags: flags)
                }
            }
        }
        overtakeOthers(than: descriptor, inode: open.inode)
        inodes[open.inode]?.mountReadView = nil
        descriptors[descriptor]?.mountReadView = nil
        // fuse_write_update_attr: the size grows to the write's end, the attributes go stale.
        let end = offset + Int64(bytes.count)
        inodes[open.inode]?.size = max(inode.size, end)
        inodes[open.inode]?.attributesValidUntil = 0
        if var pages = inodes[open.inode]?.pages {
            if offset <= pages.count {
                let start = pages.startIndex + Int(offset)
                pages.replaceSubrange(start..<min(pages.endIndex, start + bytes.count), with: bytes)
                inodes[open.inode]?.pages = pages
            } else {
                inodes[open.inode]?.pages = nil
            }
        }
        return offset
    }

    /// `ftruncate`: a setattr whose reply the kernel takes as it is.
    func truncate(_ descriptor: Int, to size: Int64) throws {
        guard let open = descriptors[descriptor], let inode = inodes[open.inode] else {
            throw FileSystemError.badHandle
        }
        if world.breakage == .ignoreKernelView, let ref = inode.ref {
            _ = try request { _ in try store.tree.truncate(ref, to: size, view: nil) }
            inodes[open.inode]?.size = size
            inodes[open.inode]?.attributesValidUntil = 0
        } else {
            let generation = store.tree.kernelViewGeneration
            let attributes = try request {
                try $0.setAttributes(
                    inode: open.inode, changes: AttributeChanges(size: UInt64(size)),
                    handle: open.handle == 0 ? nil : open.handle
                ).attributes
            }
            learn(attributes, generation: generation, validSeconds: Self.attributeSeconds)
            inodes[open.inode]?.size = size
        }
        overtakeOthers(than: descriptor, inode: open.inode)
        inodes[open.inode]?.mountReadView = nil
        descriptors[descriptor]?.mountReadView = nil
        if let pages = inodes[open.inode]?.pages, pages.count > size {
            inodes[open.inode]?.pages = pages.prefix(Int(size))
        }
    }

    /// True when the mount will judge a write through `descriptor` by a view
    /// newer than what its program learned, with a pulled change of its note
    /// in between: the write then applies at the program's offsets as it is.
    /// With opens skipped the mount documents this case (another program's
    /// stat after the pull); the simulation does not make such writes.
    /// The mount's rule, mirrored: a rewrite (truncation first, or a write
    /// at offset 0) is judged by the oldest read of the file too, a write at
    /// a later offset only by what the kernel learned (and, with open
    /// requests, by its handle's open and reads).
    func isInKnownGap(_ descriptor: Int) -> Bool {
        guard let open = descriptors[descriptor], let inode = inodes[open.inode] else { return false }
        let rewrite = switch open.plan {
        case .rewrite, .atomicSave, .writeAt(0): true
        case .append, .writeAt, .writeAtEndAskedLate: false
        }
        let mountView = rewrite ? min(inode.mountReadView ?? inode.mountView, inode.mountView) : inode.mountView
        // A rename over the note comes through no handle: only the inode's views judge it.
        var handleViews = opensSkipped ? [] : [open.handleView, open.mountReadView].compactMap { $0 }
        if case .atomicSave = open.plan { handleViews = [] }
        let judged = (handleViews + [mountView]).min() ?? mountView
        return open.refs.contains { ref in (pulledChanges[ref] ?? []).contains { $0 > open.knowledge && $0 <= judged } }
    }

    /// What the program holding `descriptor` will do, once it knows.
    func setPlan(_ descriptor: Int, _ plan: Plan) {
        descriptors[descriptor]?.plan = plan
    }

    /// Descriptors whose program acts at `step` or earlier, oldest first.
    func dueDescriptors(by step: Int) -> [Int] {
        descriptors.filter { $0.value.due <= step }.keys.sorted()
    }
}
