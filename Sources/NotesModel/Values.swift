import Foundation

/// What a note is, as synced: its title, bytes and folder (nil = the root).
public struct NoteContent: Hashable, Sendable {
    public var title: String
    public var body: Data
    public var folderID: FolderID?

    public init(title: String, body: Data, folderID: FolderID?) {
        self.title = title
        self.body = body
        self.folderID = folderID
    }

    /// Titles compare byte for byte (a title is a file name): `String ==` would call
    /// precomposed and decomposed `é` the same title.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.title.utf8.elementsEqual(rhs.title.utf8) && lhs.body == rhs.body && lhs.folderID == rhs.folderID
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(title.utf8))
        hasher.combine(body)
        hasher.combine(folderID)
    }
}

/// What a folder is, as synced: its name and parent (nil = the root).
public struct FolderContent: Hashable, Sendable {
    public var name: String
    public var parentID: FolderID?

    public init(name: String, parentID: FolderID?) {
        self.name = name
        self.parentID = parentID
    }

    /// Names compare byte for byte, like titles.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.name.utf8.elementsEqual(rhs.name.utf8) && lhs.parentID == rhs.parentID
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(name.utf8))
        hasher.combine(parentID)
    }
}
