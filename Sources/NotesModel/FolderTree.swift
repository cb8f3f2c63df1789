import Foundation

/// Rules of the folder tree that every machine applies the same way: no cycles, a
/// note or folder whose parent is gone is shown in the root, shared ids for
/// folders made offline on two machines.
public enum FolderTree {
    /// The namespace of ids for folders made in the root (a fixed, random UUID).
    public static let rootNamespace = UUID(
        uuid: (
            0x46, 0x8E, 0x20, 0xE8, 0xE8, 0x0D, 0x44, 0x26, 0x82, 0x55, 0x8D, 0xE6, 0x23, 0xCD, 0x1B, 0x18
        ))

    /// True when moving `folder` under `newParent` would put it inside itself. `parentOf`
    /// returns the parent of a folder (nil = root) or nil-outer when the folder is unknown.
    /// A loop already present above `newParent` also counts: the folder would be cut off from the root.
    public static func wouldCreateCycle(
        moving folder: FolderID, to newParent: FolderID?, parentOf: (FolderID) -> FolderID??
    ) -> Bool {
        guard var current = newParent else { return false }
        var seen: Set<FolderID> = []
        while true {
            if current == folder { return true }
            guard seen.insert(current).inserted else { return true }
            // An unknown folder or the root ends the walk without meeting `folder`.
            guard let parent = parentOf(current), let next = parent else { return false }
            current = next
        }
    }

    /// The folder a note is shown in: its own folder when that folder exists and is live,
    /// else nil (the root). The stored folder id is left alone.
    public static func displayedFolder(of folderID: FolderID?, isLive: (FolderID) -> Bool) -> FolderID? {
        guard let folderID, isLive(folderID) else { return nil }
        return folderID
    }

    /// The folder a folder is shown in: its parent when live, else nil (the root). A
    /// folder in a loop of live folders (a local move and a pulled one crossing) is
    /// shown in the root too, so the shown tree never has a cycle.
    public static func displayedParent(
        of folder: FolderID, parentOf: (FolderID) -> FolderID??, isLive: (FolderID) -> Bool
    ) -> FolderID? {
        guard let stored = parentOf(folder), let parent = stored, isLive(parent) else { return nil }
        var seen: Set<FolderID> = []
        var current = parent
        while true {
            if current == folder { return nil }
            // Stop at a dead or unknown folder, the root, or a loop that `folder` is not in.
            guard isLive(current), seen.insert(current).inserted, let up = parentOf(current), let next = up
            else { return parent }
            current = next
        }
    }

    /// The id a folder made on this machine takes: name-based on (parent id or a fixed root
    /// namespace, name) via `NameBasedID`, so the same folder made offline on two machines is one.
    public static func derivedFolderID(parent: FolderID?, name: String) -> FolderID {
        FolderID(NameBasedID.make(namespace: parent?.uuid ?? rootNamespace, name: name))
    }
}
