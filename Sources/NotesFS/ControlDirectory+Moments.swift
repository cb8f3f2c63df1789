import Foundation
import FuseKit
import NotesModel
import NotesStore

// `.notesfs/at/<moment>/`: the notes and folders as they were at a moment,
// read-only (`MomentCache` builds and keeps them). `.notesfs/at` itself
// lists only its README; a moment is found by its name.
extension ControlDirectory {
    static let atReadmeName = "README"

    /// The control directory of a mount whose moments ask the server
    /// through `hooks` (when the command set a fetcher there).
    init(tree: NotesTree, hooks: MountHooks = MountHooks(), log: MountLog = .discard) {
        self.init(tree: tree, hooks: hooks, moments: MomentCache(tree: tree, hooks: hooks, log: log))
    }

    func atChild(name: String) -> Node? {
        if name == Self.atReadmeName { return .atReadme }
        // A failed build answers "no such name"; the next lookup tries again.
        guard let number = try? moments.resolve(name) else { return nil }
        return .moment(number, 0)
    }

    func momentChild(_ number: UInt64, _ index: Int, name: String) -> Node? {
        guard let moment = moments.moment(number), let child = moment.tree.child(of: index, named: name) else {
            return nil
        }
        return .moment(number, child)
    }

    /// A moment's node; ENOENT once the moment is no longer kept.
    func momentNode(_ number: UInt64, _ index: Int) throws -> (moment: ShownMoment, node: MomentTree.Node) {
        guard let moment = moments.moment(number), moment.tree.nodes.indices.contains(index) else {
            throw FileSystemError.notFound
        }
        return (moment, moment.tree.nodes[index])
    }

    func momentAttributes(_ number: UInt64, _ index: Int, uid: UInt32, gid: UInt32) throws -> FileAttributes {
        let (moment, node) = try momentNode(number, index)
        return Self.attributes(of: node, inode: Self.inode(.moment(number, index)), at: moment.at, uid: uid, gid: gid)
    }

    static func attributes(of node: MomentTree.Node, inode: UInt64, at: Date, uid: UInt32, gid: UInt32)
        -> FileAttributes
    {
        // Folders show the moment itself as their time; notes their version's.
        let time = node.isDirectory ? Int64((at.timeIntervalSince1970 * 1e9).rounded(.down)) : node.modifiedNanoseconds
        return FileAttributes(
            inode: inode, kind: node.isDirectory ? .directory : .regular, size: UInt64(max(0, node.size)),
            permissions: node.isDirectory ? 0o555 : 0o444,
            linkCount: node.isDirectory ? 2 + UInt32(clamping: node.subdirectories) : 1, uid: uid, gid: gid,
            accessTimeNanoseconds: time, modificationTimeNanoseconds: time, changeTimeNanoseconds: time)
    }

    func momentText(_ number: UInt64, _ index: Int) throws -> Data {
        let (moment, node) = try momentNode(number, index)
        guard !node.isDirectory, let body = node.body else { throw FileSystemError.isADirectory }
        if case .server(let version) = body {
            guard let texts = moment.texts else { throw FileSystemError.io }
            return try texts.text(ofNode: index, version: version)
        }
        do {
            return try tree.momentText(body)
        } catch {
            // This machine let go of the text since the moment was built
            // (a pruned history entry, an emptied trash).
            if case .notFound = error { throw FileSystemError.notFound }
            throw error
        }
    }

    /// `.notesfs/at`: `.`, `..` and the README.
    func listAt(offset: Int64, uid: UInt32, gid: UInt32, add: (DirectoryEntry) -> Bool) throws {
        let selfAttributes = try attributes(.at, uid: uid, gid: gid)
        let readme = Data(moments.readme().utf8)
        let items: [(String, FileAttributes)] = [
            (".", selfAttributes), ("..", selfAttributes),
            (Self.atReadmeName, generatedAttributes(.atReadme, size: readme.count, uid: uid, gid: gid)),
        ]
        for (index, item) in items.enumerated() where Int64(index) >= offset {
            guard add(DirectoryEntry(name: item.0, attributes: item.1, offset: Int64(index + 1), reply: nil)) else {
                return
            }
        }
    }

    /// A moment's folder from `offset`: 1 is `.`, 2 is `..`, then its
    /// children by name; each with an entry reply, so `ls -lR` needs no
    /// lookup per entry.
    func listMoment(
        _ number: UInt64, _ index: Int, offset: Int64, uid: UInt32, gid: UInt32,
        reply: (FileAttributes) -> EntryReply, add: (DirectoryEntry) -> Bool
    ) throws {
        let (moment, node) = try momentNode(number, index)
        guard node.isDirectory else { throw FileSystemError.notADirectory }
        let selfAttributes = Self.attributes(
            of: node, inode: Self.inode(.moment(number, index)), at: moment.at, uid: uid, gid: gid)
        for (position, name) in [".", ".."].enumerated() where Int64(position) >= offset {
            guard add(DirectoryEntry(name: name, attributes: selfAttributes, offset: Int64(position + 1), reply: nil))
            else { return }
        }
        let first = max(0, Int(clamping: offset) - 2)
        guard first < node.children.count else { return }
        for position in first..<node.children.count {
            let child = node.children[position]
            let attributes = Self.attributes(
                of: moment.tree.nodes[child], inode: Self.inode(.moment(number, child)), at: moment.at, uid: uid,
                gid: gid)
            let entry = DirectoryEntry(
                name: moment.tree.nodes[child].name, attributes: attributes, offset: Int64(position + 3),
                reply: reply(attributes))
            guard add(entry) else { return }
        }
    }
}

extension ControlDirectory.Node {
    /// True for `.notesfs/at`, its README and everything in a moment.
    var isInMoments: Bool {
        switch self {
        case .at, .atReadme, .moment: true
        default: false
        }
    }
}

extension ControlDirectory {
    /// True when `inode` is `.notesfs/at` or inside it.
    static func isInMoments(_ inode: UInt64) -> Bool {
        node(forInode: inode)?.isInMoments ?? false
    }
}
