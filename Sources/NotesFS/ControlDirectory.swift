import Foundation
import FuseKit
import NotesModel
import NotesStore

/// The hidden `.notesfs` directory in the mount root: not listed by readdir
/// (so `grep -r`, `cp -r` and `rsync` never see it) but reachable by name.
///
/// Its inodes live in a reserved range far above the store's counter. Files
/// are generated when opened and read with direct I/O, so each open sees the
/// current status.
struct ControlDirectory: Sendable {
    static let name = NotesStore.controlDirectoryName

    enum Node: Hashable {
        case root
        case status
        case statusJSON
        case pending
        case conflicts
        case history
        case historyItem(Int64)
        case trash
        /// A folder inside the trash, by its number in `trashDirectories`.
        case trashDirectory(UInt64)
        /// A note in the trash, by its trash entry's seq.
        case trashItem(Int64)
        /// `.notesfs/at`, which holds only its README and the moments looked up by name.
        case at
        case atReadme
        /// Node `index` of the moment kept under `number` (0 is the moment's root).
        case moment(UInt64, Int)
    }

    /// Control inodes are `base + n`; history items `base + historyBase +
    /// seq`, trash items `base + trashItemBase + seq`, trash folders `base +
    /// trashDirectoryBase + number`.
    static let inodeBase: UInt64 = 0x7FFF_0000_0000_0000
    static let historyBase: UInt64 = 0x1_0000
    static let trashItemBase: UInt64 = 1 << 44
    static let trashDirectoryBase: UInt64 = 1 << 45
    static let momentBase: UInt64 = 1 << 50
    static let momentShift: UInt64 = 26
    static let files: [(String, Node)] = [
        ("status", .status), ("status.json", .statusJSON), ("pending", .pending), ("conflicts", .conflicts),
        ("history", .history), ("trash", .trash), ("at", .at),
    ]

    let tree: NotesTree
    /// Supplies sync progress and retry lines for `status`.
    var hooks = MountHooks()
    /// Numbers for the trash's folders, which have no row of their own.
    let trashDirectories = TrashDirectoryNumbers()
    /// Trash listings kept between the pages of one `readdir`.
    let trashListings = TrashListings()
    /// The moments of `.notesfs/at`.
    let moments: MomentCache

    static func owns(_ inode: UInt64) -> Bool { inode >= inodeBase }

    static func inode(_ node: Node) -> UInt64 {
        switch node {
        case .root: inodeBase + 1
        case .status: inodeBase + 2
        case .statusJSON: inodeBase + 3
        case .pending: inodeBase + 4
        case .conflicts: inodeBase + 5
        case .history: inodeBase + 6
        case .trash: inodeBase + 7
        case .at: inodeBase + 8
        case .atReadme: inodeBase + 9
        case .moment(let number, let index): inodeBase + momentBase + (number << momentShift) + UInt64(max(0, index))
        case .historyItem(let seq): inodeBase + historyBase + UInt64(max(0, seq))
        case .trashItem(let seq): inodeBase + trashItemBase + UInt64(max(0, seq))
        case .trashDirectory(let number): inodeBase + trashDirectoryBase + number
        }
    }

    static func node(forInode inode: UInt64) -> Node? {
        guard owns(inode) else { return nil }
        let offset = inode - inodeBase
        if offset >= momentBase {
            let relative = offset - momentBase
            return .moment(relative >> momentShift, Int(relative & ((1 << momentShift) - 1)))
        }
        if offset >= trashDirectoryBase { return .trashDirectory(offset - trashDirectoryBase) }
        if offset >= trashItemBase { return .trashItem(Int64(offset - trashItemBase)) }
        if offset >= historyBase { return .historyItem(Int64(offset - historyBase)) }
        switch offset {
        case 1: return .root
        case 2: return .status
        case 3: return .statusJSON
        case 4: return .pending
        case 5: return .conflicts
        case 6: return .history
        case 7: return .trash
        case 8: return .at
        case 9: return .atReadme
        default: return nil
        }
    }

    /// The control node named `name` in directory `inode`, if there is one.
    /// A history name must be the entry's whole current name (one indexed read).
    func child(ofInode inode: UInt64, name: String) -> Node? {
        if inode == 1 { return name == Self.name ? .root : nil }
        switch Self.node(forInode: inode) {
        case .root?:
            return Self.files.first { $0.0 == name }?.1
        case .history?:
            // A failed read answers "no such name"; the next lookup asks again.
            guard let entry = try? tree.historyEntry(named: name) else { return nil }
            return .historyItem(entry.seq)
        case .trash?:
            return trashChild(in: "", name: name)
        case .trashDirectory(let number)?:
            return trashDirectories.path(number).flatMap { trashChild(in: $0, name: name) }
        case .at?:
            return atChild(name: name)
        case .moment(let number, let index)?:
            return momentChild(number, index, name: name)
        default:
            return nil
        }
    }

    func historyEntry(_ seq: Int64) throws -> HistoryEntry {
        guard let entry = try tree.historyEntry(seq) else { throw FileSystemError.notFound }
        return entry
    }

    func attributes(_ node: Node, uid: UInt32, gid: UInt32) throws -> FileAttributes {
        let now = NotesFileSystem.nowNanoseconds()
        switch node {
        case .root, .history, .trash, .trashDirectory, .at:
            // `.notesfs` holds three subdirectories, `history`, `trash` and `at`.
            return FileAttributes(
                inode: Self.inode(node), kind: .directory, size: 0, permissions: 0o555,
                linkCount: node == .root ? 5 : 2, uid: uid, gid: gid, accessTimeNanoseconds: now,
                modificationTimeNanoseconds: now, changeTimeNanoseconds: now)
        case .historyItem(let seq):
            return Self.attributes(of: try historyEntry(seq), uid: uid, gid: gid)
        case .trashItem(let seq):
            guard let entry = try tree.trash.entry(seq) else { throw FileSystemError.notFound }
            return Self.attributes(of: entry, uid: uid, gid: gid)
        case .moment(let number, let index):
            return try momentAttributes(number, index, uid: uid, gid: gid)
        default:
            return generatedAttributes(node, size: try content(node).count, uid: uid, gid: gid)
        }
    }

    /// Attributes of a generated file whose content is `size` bytes now. The
    /// mtime is now: it moves on every getattr, so the kernel never keeps old pages.
    func generatedAttributes(_ node: Node, size: Int, uid: UInt32, gid: UInt32) -> FileAttributes {
        let now = NotesFileSystem.nowNanoseconds()
        return FileAttributes(
            inode: Self.inode(node), kind: .regular, size: UInt64(size), permissions: 0o444, uid: uid, gid: gid,
            accessTimeNanoseconds: now, modificationTimeNanoseconds: now, changeTimeNanoseconds: now)
    }

    func content(_ node: Node) throws -> Data {
        switch node {
        case .root, .history, .trash, .trashDirectory, .at: throw FileSystemError.isADirectory
        case .historyItem(let seq): return try tree.historyBody(seq)
        case .atReadme: return Data(moments.readme().utf8)
        case .moment(let number, let index): return try momentText(number, index)
        case .trashItem(let seq): return try tree.trash.body(seq)
        case .status:
            var status = try tree.status()
            status.live = hooks.liveSync()
            return Data(status.humanText(nowNanoseconds: NotesFileSystem.nowNanoseconds()).utf8)
        case .statusJSON:
            var status = try tree.status()
            status.live = hooks.liveSync()
            return status.json()
        case .pending:
            let status = try tree.status()
            return Data(status.unsyncedPaths.map { $0 + "\n" }.joined().utf8)
        case .conflicts:
            return Data(ConflictCopyInfo.listing(try tree.conflictCopies()).utf8)
        }
    }

    static func attributes(of entry: HistoryEntry, uid: UInt32, gid: UInt32) -> FileAttributes {
        FileAttributes(
            inode: inode(.historyItem(entry.seq)), kind: .regular, size: UInt64(max(0, entry.size)),
            permissions: 0o444, uid: uid, gid: gid, accessTimeNanoseconds: entry.savedNanoseconds,
            modificationTimeNanoseconds: entry.savedNanoseconds, changeTimeNanoseconds: entry.savedNanoseconds)
    }

    /// A history listing asks the store for this many entries at a time: a
    /// kernel request holds 20–50 of them (one page), and the rows read past
    /// the last one that fits are read again by the next request.
    static let historyBatchEntries = 32

    /// Lists a control directory from `offset`: 1 is `.`, 2 is `..`; a
    /// history entry's offset is its seq + 2, so each page starts where the
    /// last one stopped and costs only the entries it returns.
    func list(
        directoryInode: UInt64, offset: Int64, uid: UInt32, gid: UInt32, reply: (FileAttributes) -> EntryReply,
        add: (DirectoryEntry) -> Bool
    ) throws {
        guard let node = Self.node(forInode: directoryInode) else { throw FileSystemError.notFound }
        switch node {
        case .root, .history: break
        case .trash:
            return try listTrash("", node: node, offset: offset, uid: uid, gid: gid, reply: reply, add: add)
        case .trashDirectory(let number):
            guard let path = trashDirectories.path(number) else { throw FileSystemError.notFound }
            return try listTrash(path, node: node, offset: offset, uid: uid, gid: gid, reply: reply, add: add)
        case .at:
            return try listAt(offset: offset, uid: uid, gid: gid, add: add)
        case .moment(let number, let index):
            return try listMoment(number, index, offset: offset, uid: uid, gid: gid, reply: reply, add: add)
        default: throw FileSystemError.notADirectory
        }
        let selfAttributes = try attributes(node, uid: uid, gid: gid)
        // Control inodes are not counted (forget ignores them). Generated
        // files get no entry replies, so each stat asks again; history
        // entries do (readdirplus), so `ls -l` costs no lookup per entry.
        for (index, name) in [".", ".."].enumerated() where Int64(index) >= offset {
            guard add(DirectoryEntry(name: name, attributes: selfAttributes, offset: Int64(index + 1), reply: nil))
            else { return }
        }
        if node == .root {
            for (index, (name, child)) in Self.files.enumerated() where Int64(index + 2) >= offset {
                let entry = DirectoryEntry(
                    name: name, attributes: try attributes(child, uid: uid, gid: gid), offset: Int64(index + 3),
                    reply: nil)
                guard add(entry) else { return }
            }
            return
        }
        var after = max(0, offset - 2)
        while true {
            let batch = try tree.historyPage(afterSeq: after, limit: Self.historyBatchEntries)
            for entry in batch {
                let attributes = Self.attributes(of: entry, uid: uid, gid: gid)
                let listed = DirectoryEntry(
                    name: entry.name, attributes: attributes, offset: entry.seq + 2, reply: reply(attributes))
                guard add(listed) else { return }
                after = entry.seq
            }
            if batch.count < Self.historyBatchEntries { return }
        }
    }
}
