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
}

/// What a folder is, as synced: its name and parent (nil = the root).
public struct FolderContent: Hashable, Sendable {
    public var name: String
    public var parentID: FolderID?

    public init(name: String, parentID: FolderID?) {
        self.name = name
        self.parentID = parentID
    }
}
