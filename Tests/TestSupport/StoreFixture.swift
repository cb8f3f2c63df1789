import Foundation
@testable import NotesStore

/// A store on a real SQLite file in a fresh temporary directory.
public struct StoreFixture {
    public let directory: TemporaryDirectory
    public let store: NotesStore

    public init(configuration: StoreConfiguration = StoreConfiguration()) throws {
        directory = try TemporaryDirectory(prefix: "notesfs-store")
        store = try NotesStore(path: directory.file("notes.sqlite"), configuration: configuration)
    }

    public var databasePath: String { directory.file("notes.sqlite") }

    public func remove() { directory.remove() }
}

extension Data {
    /// UTF-8 bytes of `text`.
    public init(utf8 text: String) { self = Data(text.utf8) }
}
