// TEMPORARY local scaffold until the model branch merges. Not committed.
import Foundation
public enum NameCodec {
    public static let maxNameBytes = 255
    public static func displayName(forTitle title: String, inRoot: Bool) -> String {
        if title.isEmpty || title == "." || title == ".." { return "Untitled" }
        if inRoot && title == ".notesfs" { return "notesfs" }
        return title.replacingOccurrences(of: "/", with: "∕").replacingOccurrences(of: "\0", with: "␀")
    }
    public static func title(forName name: String) -> String { name }
    public static func isValidFileName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0") && name.utf8.count <= 255
    }
}
public enum DisplayNames {
    public static func suffixed(_ name: String, number: Int) -> String {
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot]) (\(number))\(name[dot...])"
        }
        return "\(name) (\(number))"
    }
    public static func lowestFree(_ base: String, isTaken: (String) -> Bool) -> String {
        if !isTaken(base) { return base }
        var n = 2
        while isTaken(suffixed(base, number: n)) { n += 1 }
        return suffixed(base, number: n)
    }
}
public enum LocalOnlyNames {
    public static func isLocalOnly(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix("~") || name.hasSuffix(".swp") || name == "4913" || name.hasSuffix(".tmp") || name.hasPrefix("~") || name.hasSuffix(".part") || (name.hasPrefix("#") && name.hasSuffix("#")) || name == "Thumbs.db" || name == "desktop.ini"
    }
}
public enum FolderTree {
    public static func wouldCreateCycle(moving folder: FolderID, to newParent: FolderID?, parentOf: (FolderID) -> FolderID??) -> Bool {
        var current = newParent
        var steps = 0
        while let c = current, steps < 10000 {
            if c == folder { return true }
            guard let p = parentOf(c) else { return false }
            current = p; steps += 1
        }
        return false
    }
    public static func displayedFolder(of folderID: FolderID?, isLive: (FolderID) -> Bool) -> FolderID? {
        guard let folderID, isLive(folderID) else { return nil }
        return folderID
    }
    public static func derivedFolderID(parent: FolderID?, name: String) -> FolderID {
        FolderID(NameBasedID.make(namespace: parent?.uuid ?? UUID(uuid: (0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0)), name: name))
    }
}
public enum ConflictPolicy {
    public static func mergeFolder(base: FolderContent?, local: FolderContent?, remote: FolderContent?) -> FolderContent? {
        guard let local else { return remote }
        guard let remote else { return local }
        guard let base else { return remote }
        return FolderContent(name: local.name != base.name && remote.name == base.name ? local.name : remote.name,
                             parentID: local.parentID != base.parentID && remote.parentID == base.parentID ? local.parentID : remote.parentID)
    }
    public static func conflictCopyTitle(for title: String, device: String, date: Date) -> String { "\(title) (conflicted copy \(device))" }
    public static func conflictCopyID(for changeID: ChangeID) -> NoteID { NoteID(NameBasedID.make(namespace: changeID.uuid, name: "conflict-copy")) }
    public static func notSyncedTitle(for title: String) -> String { DisplayNames.suffixed(title, number: 0).replacingOccurrences(of: " (0)", with: " (not synced)") }
}
