import Foundation
import FuseKit
import NotesStore
import Synchronization

// `.notesfs/trash`: the notes in the trash, read-only, in their old folders
// (`TrashTree`). Moving one out is a restore (NotesFileSystem+Trash.swift).
//
// A moved entry's inode stays at its new name in the kernel until the kernel
// looks that name up again; so every name in the trash is handed out with an
// entry timeout of 0 (`CacheTimeouts.entrySeconds(of:)`), and the next path
// walk after a restore finds the note itself.
extension ControlDirectory {
    /// The node `name` stands for in the trash folder `directory`.
    func trashChild(in directory: String, name: String) -> Node? {
        // A failed read answers "no such name"; the next lookup asks again.
        guard let found = try? tree.trash.node(named: name, in: directory) else { return nil }
        switch found {
        case .directory(let path): return trashDirectories.number(for: path).map(Node.trashDirectory)
        case .note(let entry): return .trashItem(entry.seq)
        }
    }

    static func attributes(of entry: TrashEntry, uid: UInt32, gid: UInt32) -> FileAttributes {
        FileAttributes(
            inode: inode(.trashItem(entry.seq)), kind: .regular, size: UInt64(max(0, entry.size)),
            permissions: 0o444, uid: uid, gid: gid, accessTimeNanoseconds: entry.deletedNanoseconds,
            modificationTimeNanoseconds: entry.deletedNanoseconds, changeTimeNanoseconds: entry.deletedNanoseconds)
    }

    /// Lists the trash folder `path` from `offset` (1 is `.`, 2 is `..`, then
    /// folders and notes by name, numbered in that order). The listing is
    /// made whole when a listing starts (offset 0) and kept for the requests
    /// that continue it, so each page costs what it returns.
    func listTrash(
        _ path: String, node: Node, offset: Int64, uid: UInt32, gid: UInt32,
        reply: (FileAttributes) -> EntryReply, add: (DirectoryEntry) -> Bool
    ) throws {
        let inode = Self.inode(node)
        var items: [TrashListings.Item]
        if offset > 0, let kept = trashListings.items(of: inode) {
            items = kept
        } else {
            let selfAttributes = try attributes(node, uid: uid, gid: gid)
            items = [(".", selfAttributes), ("..", selfAttributes)]
            let listing = TrashTree.listing(of: path, entries: try tree.trash.entries(under: path))
            for name in listing.directories {
                guard let number = trashDirectories.number(for: path.isEmpty ? name : path + "/" + name) else {
                    continue
                }
                items.append((name, try attributes(.trashDirectory(number), uid: uid, gid: gid)))
            }
            for note in listing.notes {
                items.append((note.name, Self.attributes(of: note.entry, uid: uid, gid: gid)))
            }
            trashListings.keep(items, of: inode)
        }
        for (index, item) in items.enumerated() where Int64(index) >= offset {
            var entryReply: EntryReply?
            if index >= 2 {
                entryReply = reply(item.attributes)
                entryReply?.entryTimeoutSeconds = CacheTimeouts.entrySeconds(of: item.attributes.inode)
            }
            let listed = DirectoryEntry(
                name: item.name, attributes: item.attributes, offset: Int64(index + 1), reply: entryReply)
            guard add(listed) else { return }
        }
    }
}

/// Trash listings being read page by page, by folder inode.
final class TrashListings: Sendable {
    typealias Item = (name: String, attributes: FileAttributes)
    /// At most this many listings are kept; a new one pushes out the oldest.
    static let listingsMax = 16

    private let kept = Mutex<[(inode: UInt64, items: [Item])]>([])

    func keep(_ items: [Item], of inode: UInt64) {
        kept.withLock { kept in
            kept.removeAll { $0.inode == inode }
            kept.append((inode, items))
            if kept.count > Self.listingsMax { kept.removeFirst(kept.count - Self.listingsMax) }
        }
    }

    func items(of inode: UInt64) -> [Item]? {
        kept.withLock { kept in kept.last { $0.inode == inode }?.items }
    }
}

/// Numbers for the trash's folders, made as they are first looked up and
/// kept while the mount runs (a folder has no row to take a number from).
final class TrashDirectoryNumbers: Sendable {
    /// At most this many folders get numbers; past it, further folders are
    /// not found until the mount starts again.
    static let directoriesMax = 65_536

    private struct Table {
        var numbers: [String: UInt64] = [:]
        var paths: [UInt64: String] = [:]
    }

    private let table = Mutex(Table())

    /// The number of the trash folder `path`, made now if it has none.
    func number(for path: String) -> UInt64? {
        table.withLock { table in
            if let number = table.numbers[path] { return number }
            guard table.numbers.count < Self.directoriesMax else { return nil }
            let number = UInt64(table.numbers.count + 1)
            table.numbers[path] = number
            table.paths[number] = path
            return number
        }
    }

    /// The path of the trash folder numbered `number`.
    func path(_ number: UInt64) -> String? {
        table.withLock { $0.paths[number] }
    }
}
