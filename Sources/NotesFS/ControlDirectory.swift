import Foundation
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
    }

    /// Control inodes are `base + n`; history items `base + historyBase + seq`.
    static let inodeBase: UInt64 = 0x7FFF_0000_0000_0000
    static let historyBase: UInt64 = 0x1_0000
    static let files: [(String, Node)] = [
        ("status", .status), ("status.json", .statusJSON), ("pending", .pending), ("conflicts", .conflicts),
        ("history", .history),
    ]

    let store: NotesStore
    /// Supplies sync progress and retry lines for `status`.
    var hooks = MountHooks()

    static func owns(_ inode: UInt64) -> Bool { inode >= inodeBase }

    static func inode(_ node: Node) -> UInt64 {
        switch node {
        case .root: inodeBase + 1
        case .status: inodeBase + 2
        case .statusJSON: inodeBase + 3
        case .pending: inodeBase + 4
        case .conflicts: inodeBase + 5
        case .history: inodeBase + 6
        case .historyItem(let seq): inodeBase + historyBase + UInt64(max(0, seq))
        }
    }

    static func node(forInode inode: UInt64) -> Node? {
        guard owns(inode) else { return nil }
        let offset = inode - inodeBase
        if offset >= historyBase { return .historyItem(Int64(offset - historyBase)) }
        switch offset {
        case 1: return .root
        case 2: return .status
        case 3: return .statusJSON
        case 4: return .pending
        case 5: return .conflicts
        case 6: return .history
        default: return nil
        }
    }

    /// The control node named `name` in directory `inode`, if there is one.
    func child(ofInode inode: UInt64, name: String) -> Node? {
        if inode == 1 { return name == Self.name ? .root : nil }
        switch Self.node(forInode: inode) {
        case .root?:
            return Self.files.first { $0.0 == name }?.1
        case .history?:
            guard let seq = Self.historySeq(fromName: name) else { return nil }
            return .historyItem(seq)
        default:
            return nil
        }
    }

    /// History files are named `<seq> <date> <title>`; the number is what
    /// `notesfs restore` takes.
    static func historyName(_ entry: HistoryEntry) -> String {
        let seconds = Double(entry.savedNanoseconds) / 1e9
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH.mm.ss"
        let stamp = formatter.string(from: Date(timeIntervalSince1970: seconds))
        let safeTitle = entry.title.replacingOccurrences(of: "/", with: "\u{2215}")
            .replacingOccurrences(of: "\0", with: "\u{2400}")
        var name = "\(entry.seq) \(stamp) \(safeTitle)"
        while name.utf8.count > 255 { name.removeLast() }
        return name
    }

    static func historySeq(fromName name: String) -> Int64? {
        guard let first = name.split(separator: " ", maxSplits: 1).first else { return nil }
        return Int64(first)
    }

    func historyEntry(_ seq: Int64) throws -> HistoryEntry {
        guard let entry = try store.history().first(where: { $0.seq == seq }) else { throw FileSystemError.notFound }
        return entry
    }

    func attributes(_ node: Node, uid: UInt32, gid: UInt32) throws -> FileAttributes {
        let now = NotesFileSystem.nowNanoseconds()
        switch node {
        case .root, .history:
            return FileAttributes(
                inode: Self.inode(node), kind: .directory, size: 0, permissions: 0o555, linkCount: 2, uid: uid,
                gid: gid, accessTimeNanoseconds: now, modificationTimeNanoseconds: now, changeTimeNanoseconds: now)
        case .historyItem(let seq):
            let entry = try historyEntry(seq)
            return FileAttributes(
                inode: Self.inode(node), kind: .regular, size: UInt64(max(0, entry.size)), permissions: 0o444,
                uid: uid, gid: gid, accessTimeNanoseconds: entry.savedNanoseconds,
                modificationTimeNanoseconds: entry.savedNanoseconds, changeTimeNanoseconds: entry.savedNanoseconds)
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
        case .root, .history: throw FileSystemError.isADirectory
        case .historyItem(let seq): return try store.historyBody(seq)
        case .status:
            let text = try store.status().humanText(nowNanoseconds: NotesFileSystem.nowNanoseconds())
            return Data((text + (hooks.statusExtra().map { $0 + "\n" } ?? "")).utf8)
        case .statusJSON: return try store.status().json()
        case .pending:
            let status = try store.status()
            return Data(status.unsyncedPaths.map { $0 + "\n" }.joined().utf8)
        case .conflicts:
            let status = try store.status()
            return Data(status.conflictCopies.map { $0 + "\n" }.joined().utf8)
        }
    }

    func list(
        directoryInode: UInt64, offset: Int64, uid: UInt32, gid: UInt32, reply: (FileAttributes) -> EntryReply,
        add: (DirectoryEntry) -> Bool
    ) throws {
        guard let node = Self.node(forInode: directoryInode) else { throw FileSystemError.notFound }
        let selfAttributes = try attributes(node, uid: uid, gid: gid)
        var children: [(String, FileAttributes)] = [(".", selfAttributes), ("..", selfAttributes)]
        switch node {
        case .root:
            for (name, child) in Self.files {
                children.append((name, try attributes(child, uid: uid, gid: gid)))
            }
        case .history:
            for entry in try store.history() {
                let child = Node.historyItem(entry.seq)
                children.append((Self.historyName(entry), try attributes(child, uid: uid, gid: gid)))
            }
        default:
            throw FileSystemError.notADirectory
        }
        for (index, (name, attributes)) in children.enumerated() where Int64(index) >= offset {
            // Control inodes are not counted (forget ignores them), so no entry reply.
            let entry = DirectoryEntry(name: name, attributes: attributes, offset: Int64(index + 1), reply: nil)
            guard add(entry) else { return }
        }
    }
}
