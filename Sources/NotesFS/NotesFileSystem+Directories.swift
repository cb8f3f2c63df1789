import Foundation
import FuseKit
import NotesStore

// Directories: mkdir, rmdir, unlink, rename, listings.
extension NotesFileSystem {
    func makeDirectory(parent: UInt64, name: String, mode: UInt32, context: RequestContext) throws -> EntryReply {
        let view = tree.kernelViewGeneration
        let entry = try tree.makeDirectory(
            in: try directory(parent), name: name, mode: mode & 0o7777 & ~context.umask)
        return try handOut(entry, view: view)
    }

    func removeFile(parent: UInt64, name: String) throws {
        let directory = try directory(parent)
        guard let entry = try tree.lookup(in: directory, name: name) else { throw FileSystemError.notFound }
        guard entry.kind != .directory else { throw FileSystemError.isADirectory }
        preserveOpenHandles(of: entry)
        do {
            try tree.removeFile(in: directory, name: name)
        } catch {
            forgetPreserved(entry)
            throw error
        }
        if let inode = inodes.inode(for: entry.ref) { inodes.detach(inode) }
    }

    /// Undoes `preserveOpenHandles` for an inode whose entry stayed (the
    /// operation failed): its reads must go to the store again.
    func forgetPreserved(_ entry: Entry) {
        if let inode = inodes.inode(for: entry.ref) { inodes.clearSnapshot(inode) }
    }

    func removeDirectory(parent: UInt64, name: String) throws {
        let directory = try directory(parent)
        guard let entry = try tree.lookup(in: directory, name: name) else { throw FileSystemError.notFound }
        guard entry.kind == .directory else { throw FileSystemError.notADirectory }
        try tree.removeDirectory(in: directory, name: name)
        if let inode = inodes.inode(for: entry.ref) { inodes.detach(inode) }
    }

    /// Refuses what no rename here can do: swapping two names
    /// (`RENAME_EXCHANGE`, logged) and flags other than `RENAME_NOREPLACE`.
    func checkRenameFlags(_ flags: RenameFlags, name: String) throws {
        if flags.exchange {
            log.info("refused rename with RENAME_EXCHANGE of '\(name)': notes cannot swap places atomically")
            throw FileSystemError.invalid
        }
        guard flags.rawValue & ~RenameFlags.noReplace == 0 else { throw FileSystemError.invalid }
    }

    func rename(parent: UInt64, name: String, newParent: UInt64, newName: String, flags: RenameFlags) throws {
        try checkRenameFlags(flags, name: name)
        let from = try directory(parent)
        let to = try directory(newParent)
        var preserved: UInt64?
        var targetView: UInt64?
        if let target = try tree.lookup(in: to, name: newName) {
            if opensAreSkipped || handles.hasOpenFiles {
                preserveOpenHandles(of: target)
                preserved = inodes.inode(for: target.ref)
            }
            if case .note = target.ref, let inode = inodes.inode(for: target.ref) {
                // An atomic save replaces the note's text from its start: it
                // is judged as a rewrite by the oldest text read of the note.
                targetView = inodes.viewForWrite(of: inode, rewrite: true)
            }
        }
        let outcome: RenameOutcome
        do {
            outcome = try tree.rename(
                from: from, name: name, to: to, newName: newName, noReplace: flags.noReplace, targetView: targetView)
        } catch {
            if let preserved { inodes.clearSnapshot(preserved) }
            throw error
        }
        if let replaced = outcome.replacedInode { inodes.detach(replaced) }
        // The kernel keeps the source's inode at the new name: bind that
        // number to whatever entry now lives there (the same entry for a plain
        // move; the target note for a rename-over; a new entry across the
        // local-only line).
        if inodes.inode(for: outcome.ref) == nil {
            let inode = try outcome.inode ?? tree.inode(for: outcome.ref)
            inodes.rebind(inode, to: outcome.ref)
        }
        // Bytes kept for an inode that is still attached (it was not the one
        // replaced) would hide the store's: drop them.
        if let preserved { inodes.clearSnapshot(preserved) }
        // Merged with a change the saving program had not seen: the kernel's
        // pages hold the program's bytes, not the stored text.
        if outcome.contentMerged, let inode = inodes.inode(for: outcome.ref) { dropKernelView(of: inode) }
    }

    func openDirectory(inode: UInt64) throws -> OpenReply {
        guard try resolve(inode).directory != nil else { throw FileSystemError.notADirectory }
        let handle = try handles.open(.directory(inode: inode))
        guard Self.cachesListings else { return OpenReply(handle: handle, keepCache: false, directIO: true) }
        // The kernel caches the listing (cache_readdir) and keeps it across
        // opens until it changes: the kernel resets it itself for changes it
        // makes (create, unlink, rename, mkdir in this directory), and every
        // other change invalidates the directory's inode (NotesMount).
        return OpenReply(handle: handle, keepCache: inodes.noteOpened(inode), directIO: false)
    }

    /// Whether the kernel may cache directory listings (`cache_readdir`).
    /// Off, measured: a listing served from the kernel's cache brings no
    /// attributes, and since every read marks the file's atime stale in the
    /// kernel, the next `stat` of each file (a second `grep -r`) then costs one
    /// getattr round trip per file, where readdirplus refreshes a hundred
    /// files' attributes in one request. The invalidation of listings (the
    /// directory's inode, for names changed behind the kernel's back) is kept
    /// either way.
    static let cachesListings = false

    func releaseDirectory(inode: UInt64, handle: UInt64) {
        handles.close(handle)
    }

    func fsyncDirectory(inode: UInt64, handle: UInt64, dataOnly: Bool) throws {
        try tree.durableSync()
    }

    /// Offsets: 1 is `.`, 2 is `..`, and an entry's offset is its store cookie + 2.
    static let cookieOffsetBase: Int64 = 2

    func readDirectory(
        inode: UInt64, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool
    ) throws {
        let ref = try resolve(inode)
        guard let directory = ref.directory else { throw FileSystemError.notADirectory }
        let selfAttributes = FileAttributes(
            inode: inode, kind: .directory, size: 0, permissions: 0o755, linkCount: 2, uid: ownerUID, gid: ownerGID,
            accessTimeNanoseconds: 0, modificationTimeNanoseconds: 0, changeTimeNanoseconds: 0)
        if offset < 1 {
            guard add(DirectoryEntry(name: ".", attributes: selfAttributes, offset: 1, reply: nil)) else { return }
        }
        if offset < 2 {
            // `..`'s inode number is not used by the kernel; the directory's own does.
            guard add(DirectoryEntry(name: "..", attributes: selfAttributes, offset: 2, reply: nil)) else { return }
        }
        var after = max(0, offset - Self.cookieOffsetBase)
        // Lookups counted for the entries sent, recorded under one lock
        // before the reply leaves (so no forget can overtake them).
        var handedOut: [(inode: UInt64, ref: EntryRef)] = []
        let view = tree.kernelViewGeneration
        defer { inodes.lookedUp(handedOut, view: view) }
        while true {
            let batch = try tree.list(directory: directory, afterCookie: after, limit: Self.listBatchEntries)
            if batch.isEmpty { return }
            var numbers = inodes.inodes(for: batch.map { ($0.ref, $0.inode) })
            let unknown = numbers.indices.filter { numbers[$0] == nil }
            if !unknown.isEmpty {
                let made = try tree.inodes(for: unknown.map { batch[$0].ref })
                for index in unknown { numbers[index] = made[batch[index].ref] }
            }
            if plus { handedOut.reserveCapacity(handedOut.count + batch.count) }
            for (entry, number) in zip(batch, numbers) {
                guard let number else { continue }
                let attributes = attributes(entry, inode: number)
                let entryReply = plus ? reply(attributes) : nil
                let accepted = add(
                    DirectoryEntry(
                        name: entry.name, attributes: attributes, offset: entry.cookie + Self.cookieOffsetBase,
                        reply: entryReply))
                guard accepted else { return }
                if plus { handedOut.append((number, entry.ref)) }
                after = entry.cookie
            }
            if batch.count < Self.listBatchEntries { return }
        }
    }
}
