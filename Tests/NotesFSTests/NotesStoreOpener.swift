@testable import NotesStore

enum NotesStoreOpener {
    static func open(_ path: String) throws -> NotesStore { try NotesStore(path: path) }
}
