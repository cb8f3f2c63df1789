import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

/// What the store holds, read after the mount stopped.
struct StoreSnapshot {
    /// Live note path → bytes.
    var notes: [String: Data]
    /// Live note path → id.
    var ids: [String: String]
    /// (entity kind, entity id, op) of every outbox row.
    var outbox: [(kind: String, id: String, op: String)]
    var localEntryCount: Int

    static func read(_ databasePath: String) throws -> StoreSnapshot {
        try read(databasePath, store: try NotesStore(path: databasePath))
    }

    /// Read through `store`, already open on `databasePath` (the in-process tests).
    static func read(_ databasePath: String, store: NotesStore) throws -> StoreSnapshot {
        let connection = try Connection(path: databasePath)
        let rows = try connection.query(
            "SELECT n.id, \(NotesStore.noteBodySQL(of: "n")) FROM notes n WHERE n.deleted = 0"
        ) { ($0.string(0), $0.data(1)) }
        var notes: [String: Data] = [:]
        var ids: [String: String] = [:]
        for (id, body) in rows {
            guard let noteID = NoteID(id), let path = try store.path(of: .note(noteID)) else { continue }
            notes[path] = body
            ids[path] = id
        }
        let outbox = try connection.query("SELECT entity_kind, entity_id, op FROM outbox ORDER BY seq") {
            (kind: $0.string(0), id: $0.string(1), op: $0.string(2))
        }
        let locals = try connection.queryOne("SELECT count(*) FROM local_entries") { $0.int(0) } ?? 0
        return StoreSnapshot(notes: notes, ids: ids, outbox: outbox, localEntryCount: locals)
    }
}

/// Seeds notes in a data directory (before mounting) and marks them synced,
/// so a later edit is visibly an edit and a delete a tombstone.
enum Seed {
    static func syncedNotes(_ databasePath: String, _ notes: [(folder: [String], title: String, body: String)]) throws
        -> [String: String]
    {
        try syncedNotes(try NotesStore(path: databasePath), notes)
    }

    /// The same in a store already open.
    static func syncedNotes(_ store: NotesStore, _ notes: [(folder: [String], title: String, body: String)]) throws
        -> [String: String]
    {
        let ids = try unsyncedNotes(store, notes)
        try settleEverything(store)
        return ids
    }

    /// Notes made on this machine and never sent (an offline folder's notes); ids by path.
    static func unsyncedNotes(_ databasePath: String, _ notes: [(folder: [String], title: String, body: String)])
        throws -> [String: String]
    {
        try unsyncedNotes(try NotesStore(path: databasePath), notes)
    }

    static func unsyncedNotes(_ store: NotesStore, _ notes: [(folder: [String], title: String, body: String)])
        throws -> [String: String]
    {
        var ids: [String: String] = [:]
        for note in notes {
            let directory = note.folder.isEmpty ? DirectoryRef.root : try store.makeFolders(path: note.folder)
            let id = try store.createNote(in: directory, title: note.title, body: Data(note.body.utf8))
            ids["/" + (note.folder + [note.title]).joined(separator: "/")] = id.description
        }
        return ids
    }

    /// Pretends the server applied every pending change.
    static func settleEverything(_ store: NotesStore) throws {
        var version: Int64 = 1
        while true {
            let batch = try store.freezeBatch()
            if batch.isEmpty { break }
            for change in batch {
                try store.settle(change.changeID, outcome: .applied(version: version))
                version += 1
            }
        }
    }
}

extension MountFixture {
    /// Runs a shell script in the mount and fails the test when it fails.
    @discardableResult
    func sh(_ script: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try shell(script)
        #expect(
            result.status == 0, "script failed (\(result.status)): \(script)\n\(result.standardError)\n\(logTail())",
            sourceLocation: sourceLocation)
        return result.standardOutput
    }

    /// The note id shown by `getfattr`.
    func noteID(_ path: String) throws -> String {
        try shell("getfattr --only-values -n user.notesfs.id '\(path)'").standardOutput
    }
}

let mountTestsEnabled = MountFixture.shouldRun
