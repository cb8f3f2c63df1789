import Foundation
import NotesModel

/// Where the text of a note in a past moment comes from.
public enum MomentBody: Hashable, Sendable {
    /// The text itself (the server's history carries it).
    case text(Data)
    /// This machine's copy of the note (live, or deleted and kept).
    case note(NoteID)
    /// An entry of the local history (`history` table).
    case history(Int64)
    /// Version `version` of the note on the server, whose tree came without
    /// the text: fetched from the server's history when first read.
    case server(version: Int64)
}

/// A note or folder as it was at a past moment, before it is given a name
/// in the tree: what both the server's history and this machine's own
/// records are turned into.
public struct MomentItem: Hashable, Sendable {
    public enum Kind: Hashable, Sendable { case note, folder }

    public var kind: Kind
    public var id: UUID
    /// The note's title or the folder's name.
    public var name: String
    /// The note's folder or the folder's parent (nil: the root).
    public var parentID: UUID?
    /// Bytes of the note's text (0 for a folder).
    public var size: Int64
    /// When this version was made, nanoseconds since 1970.
    public var modifiedNanoseconds: Int64
    /// Nil for a folder.
    public var body: MomentBody?

    public init(
        kind: Kind, id: UUID, name: String, parentID: UUID?, size: Int64, modifiedNanoseconds: Int64,
        body: MomentBody?
    ) {
        self.kind = kind
        self.id = id
        self.name = name
        self.parentID = parentID
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.body = body
    }
}

/// A past moment's notes and folders as a directory tree, named the way the
/// mount names the live tree: a title shown by `NameCodec`, a taken name
/// getting the lowest free ` (n)` suffix (folders first, then notes, each
/// by name and id), a note or folder whose folder was not there shown in
/// the root. Node 0 is the root.
public struct MomentTree: Sendable {
    public struct Node: Sendable {
        public var name: String
        /// The note's or folder's id (nil for the root).
        public var id: UUID?
        /// The folder's node (the root's is 0, its own).
        public var parent: Int
        public var isDirectory: Bool
        public var size: Int64
        public var modifiedNanoseconds: Int64
        public var body: MomentBody?
        /// Child nodes, by name.
        public var children: [Int] = []
        public var subdirectories: Int = 0
    }

    private struct ChildKey: Hashable {
        var parent: Int
        var name: String
    }

    public private(set) var nodes: [Node]
    private var byName: [ChildKey: Int] = [:]

    public var noteCount: Int { nodes.count(where: { !$0.isDirectory }) }
    /// Folders, the root not counted.
    public var folderCount: Int { nodes.count(where: \.isDirectory) - 1 }

    public init(items: [MomentItem]) {
        nodes = [Node(name: "", id: nil, parent: 0, isDirectory: true, size: 0, modifiedNanoseconds: 0, body: nil)]
        nodes.reserveCapacity(items.count + 1)
        byName.reserveCapacity(items.count)
        var folders: [FolderID: MomentItem] = [:]
        for item in items where item.kind == .folder { folders[FolderID(item.id)] = item }
        let parentOf: (FolderID) -> FolderID?? = { id in folders[id].map { $0.parentID.map(FolderID.init) } }
        let isLive: (FolderID) -> Bool = { folders[$0] != nil }
        // Each folder's node first, so notes and subfolders can name theirs.
        let orderedFolders = folders.values.sorted(by: Self.precedes)
        var folderNodes: [FolderID: Int] = [:]
        for folder in orderedFolders {
            folderNodes[FolderID(folder.id)] = nodes.count
            nodes.append(
                Node(
                    name: "", id: folder.id, parent: 0, isDirectory: true, size: 0,
                    modifiedNanoseconds: folder.modifiedNanoseconds, body: nil))
        }
        var members: [Int: [(item: MomentItem, node: Int)]] = [:]
        for folder in orderedFolders {
            let shown = FolderTree.displayedParent(of: FolderID(folder.id), parentOf: parentOf, isLive: isLive)
            let parent = shown.flatMap { folderNodes[$0] } ?? 0
            members[parent, default: []].append((folder, folderNodes[FolderID(folder.id)] ?? 0))
        }
        let notes = items.filter { $0.kind == .note }.sorted(by: Self.precedes)
        for note in notes {
            let shown = FolderTree.displayedFolder(of: note.parentID.map(FolderID.init), isLive: isLive)
            let parent = shown.flatMap { folderNodes[$0] } ?? 0
            members[parent, default: []].append((note, nodes.count))
            nodes.append(
                Node(
                    name: "", id: note.id, parent: parent, isDirectory: false, size: note.size,
                    modifiedNanoseconds: note.modifiedNanoseconds, body: note.body))
        }
        for (parent, group) in members {
            var taken = Set<String>()
            if parent == 0 { taken.insert(NameCodec.controlDirectoryName) }
            // Folders come first in `group`, so they keep their plain names.
            for (item, node) in group {
                let base = NameCodec.displayName(forTitle: item.name, inRoot: parent == 0)
                let name = DisplayNames.lowestFree(base) { taken.contains($0) }
                taken.insert(name)
                nodes[node].name = name
                nodes[node].parent = parent
                byName[ChildKey(parent: parent, name: name)] = node
                nodes[parent].children.append(node)
                if item.kind == .folder { nodes[parent].subdirectories += 1 }
            }
        }
        for index in nodes.indices where nodes[index].isDirectory {
            let children = nodes[index].children
            nodes[index].children = children.sorted { nodes[$0].name < nodes[$1].name }
        }
    }

    /// By name, then by id (as its text sorts): the order taken names are given out in.
    /// The id is compared only between equal names, and as bytes, never formatted.
    private static func precedes(_ a: MomentItem, _ b: MomentItem) -> Bool {
        a.name != b.name ? a.name < b.name : UUIDText.precedes(a.id, b.id)
    }

    /// The node named `name` in the directory node `parent`.
    public func child(of parent: Int, named name: String) -> Int? {
        byName[ChildKey(parent: parent, name: name)]
    }

    /// The path of node `index` from the root, without a leading `/`.
    public func path(of index: Int) -> String {
        var parts: [String] = []
        var current = index
        while current != 0, nodes.indices.contains(current), parts.count < nodes.count {
            parts.append(nodes[current].name)
            current = nodes[current].parent
        }
        return parts.reversed().joined(separator: "/")
    }

    /// The node at `path` (components separated by `/`), if there is one.
    public func node(atPath path: String) -> Int? {
        var current = 0
        for component in path.split(separator: "/") where component != "." {
            guard let next = child(of: current, named: String(component)) else { return nil }
            current = next
        }
        return current
    }
}
