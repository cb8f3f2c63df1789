import Foundation
import NotesModel
import NotesStore
import SQLiteKit
import Synchronization

/// Commits saves to a store in a loop until killed, reporting each one on
/// stdout only after the store call returned. One line per `write(2)`:
///
///     ready
///     intent create <sha256> <title>   before createNote / createFile
///     intent edit <noteid> <sha256>    before write / truncate / replaceBody
///     intent delete <noteid>           before removeFile
///     saved <noteid> <rev> <sha256>    after a create or an edit returned
///     deleted <noteid>                 after a delete returned
///     synced <settled> <frozen>        after settling frozen changes as applied
///     stopped                          inside the transaction of save N of
///                                      `--stop-in-save N`, which then waits to be killed
///
/// `rev` is the note's `local_rev`, read back on a second (read-only)
/// connection after the call. Every save changes the bytes (each carries a
/// token unique to its run and counter), so `local_rev` grows by one per save.
/// Only the last intent can have been committed without its report.
final class CrashChild {
    /// Largest body the child grows a note to before replacing it.
    static let bodyBytesMax = 8 * 1024
    /// Notes the child keeps alive at most; below `notesMin` it only creates.
    static let notesMax = 60
    static let notesMin = 8

    private let options: CrashChildOptions
    private let store: NotesStore
    private let reader: Connection
    private var rng: SplitMix64
    /// Live notes, in creation order (a stable order for seeded choices).
    private var ids: [NoteID] = []
    private var bodies: [NoteID: Data] = [:]
    private var directories: [DirectoryRef] = [.root]
    /// The fake server's version counter for settling frozen changes.
    private var serverVersion: Int64 = 0
    /// Saves reported so far (create and edit intents), for `--stop-in-save`.
    private var savesStarted = 0
    private let transactionStop: TransactionStop

    init(options: CrashChildOptions) throws {
        self.options = options
        rng = SplitMix64(seed: options.seed ^ (UInt64(options.run) &* 0x2545_F491_4F6C_DD1D))
        var configuration = StoreConfiguration()
        configuration.diskReserveBytes = 0
        let stop = TransactionStop()
        transactionStop = stop
        configuration.insideWriteTransaction = { stop.reachedInsideTransaction() }
        store = try NotesStore(path: options.databasePath, configuration: configuration)
        // As the mount does: kills then land in a log whose tail is zeros.
        _ = try store.admin.prepareWriteAheadLog()
        reader = try Connection(path: options.databasePath, options: Connection.Options(mode: .readOnly))
    }

    func run() async throws {
        directories.append(try store.admin.makeFolders(path: ["crash"]))
        directories.append(try store.admin.makeFolders(path: ["crash", "nested ü"]))
        try reader.forEachRow("SELECT id, body FROM notes WHERE deleted = 0 ORDER BY seq", arguments: []) { row in
            if let id = NoteID(row.string(0)) {
                ids.append(id)
                bodies[id] = row.data(1)
            }
            return true
        }
        serverVersion = try reader.queryOne(
            """
            SELECT max(coalesce((SELECT max(server_version) FROM notes), 0),
                       coalesce((SELECT max(server_version) FROM folders), 0))
            """
        ) { $0.int64(0) } ?? 0
        report("ready")
        let deadline = Date().addingTimeInterval(options.maxSeconds)
        var counter = 0
        while Date() < deadline {
            counter += 1
            try await step(token: "zqk\(options.run)n\(counter)")
        }
        report("done \(counter)")
    }

    private func step(token: String) async throws {
        let roll = Int.random(in: 0..<100, using: &rng)
        if ids.count < Self.notesMin || (roll < 15 && ids.count < Self.notesMax) {
            try createNote(token: token)
        } else if roll < 20 {
            try createFileThenWrite(token: token)
        } else if roll < 45 {
            try replaceBody(token: token)
        } else if roll < 68 {
            try append(token: token)
        } else if roll < 75 {
            try overwriteMiddle(token: token)
        } else if roll < 80 {
            try truncate(token: token)
        } else if roll < 86 {
            try delete()
        } else if roll < 97 {
            try await sync()
        } else {
            try store.tree.durableSync()
        }
    }

    // MARK: Saves

    private func createNote(token: String) throws {
        let title = "crash \(token).md"
        let body = text(token: token, bytes: Int.random(in: 20...3_000, using: &rng))
        let directory = directories[Int.random(in: 0..<directories.count, using: &rng)]
        report("intent create \(Self.hash(body)) \(title)")
        let id = try store.admin.createNote(in: directory, title: title, body: body)
        try saved(id, body)
    }

    /// The mount's way: an empty file, then a write (two saves).
    private func createFileThenWrite(token: String) throws {
        let title = "file \(token).txt"
        let directory = directories[Int.random(in: 0..<directories.count, using: &rng)]
        report("intent create \(Self.hash(Data())) \(title)")
        let entry = try store.tree.createFile(in: directory, name: title)
        guard case .note(let id) = entry.ref else { throw ChildError("\(title) did not become a note") }
        try saved(id, Data())
        let body = text(token: token, bytes: Int.random(in: 20...2_000, using: &rng))
        report("intent edit \(id) \(Self.hash(body))")
        try store.tree.write(.note(id), offset: 0, bytes: body)
        try saved(id, body)
    }

    private func replaceBody(token: String) throws {
        let id = pick()
        let body = text(token: token, bytes: Int.random(in: 20...3_000, using: &rng))
        report("intent edit \(id) \(Self.hash(body))")
        try store.admin.replaceBody(of: id, with: body)
        try saved(id, body)
    }

    private func append(token: String) throws {
        let id = pick()
        let old = bodies[id] ?? Data()
        guard old.count < Self.bodyBytesMax else { return try replaceBody(token: token) }
        let bytes = text(token: token, bytes: Int.random(in: 10...300, using: &rng))
        let body = old + bytes
        report("intent edit \(id) \(Self.hash(body))")
        try store.tree.write(.note(id), offset: Int64(old.count), bytes: bytes)
        try saved(id, body)
    }

    private func overwriteMiddle(token: String) throws {
        let id = pick()
        let old = bodies[id] ?? Data()
        let bytes = Data(" \(token) ".utf8)
        let offset = Int.random(in: 0...old.count, using: &rng)
        var body = old
        let end = offset + bytes.count
        if end > body.count { body.append(Data(count: end - body.count)) }
        body.replaceSubrange(body.startIndex + offset..<body.startIndex + end, with: bytes)
        report("intent edit \(id) \(Self.hash(body))")
        try store.tree.write(.note(id), offset: Int64(offset), bytes: bytes)
        try saved(id, body)
    }

    /// Cuts a note to a third (the store keeps the old bytes in its history).
    private func truncate(token: String) throws {
        let id = pick()
        let old = bodies[id] ?? Data()
        guard old.count >= 3 else { return try append(token: token) }
        let body = Data(old.prefix(old.count / 3))
        report("intent edit \(id) \(Self.hash(body))")
        try store.tree.truncate(.note(id), to: Int64(body.count))
        try saved(id, body)
    }

    private func delete() throws {
        guard ids.count > Self.notesMin else { return }
        let id = pick()
        guard let entry = try store.tree.entry(for: .note(id)), let parent = entry.parent else {
            throw ChildError("note \(id) has no entry")
        }
        report("intent delete \(id)")
        try store.tree.removeFile(in: parent, name: entry.name)
        ids.removeAll { $0 == id }
        bodies[id] = nil
        report("deleted \(id)")
    }

    /// Plays the sync engine against an always-accepting server; sometimes
    /// leaves part of the batch in flight, as a crash during a push would.
    private func sync() async throws {
        let batch = try await store.replica.freezeBatch(maxCount: Int.random(in: 1...20, using: &rng))
        let settling = Int.random(in: 0..<4, using: &rng) == 0 ? batch.count / 2 : batch.count
        for change in batch.prefix(settling) {
            serverVersion += 1
            try await store.replica.settle(change.changeID, outcome: .applied(version: serverVersion))
        }
        report("synced \(settling) \(batch.count)")
    }

    // MARK: Helpers

    private func saved(_ id: NoteID, _ body: Data) throws {
        guard
            let rev = try reader.queryOne(
                "SELECT local_rev FROM notes WHERE id = ? AND deleted = 0", id.description, map: { $0.int64(0) })
        else { throw ChildError("note \(id) is not readable after its save") }
        if bodies[id] == nil { ids.append(id) }
        bodies[id] = body
        report("saved \(id) \(rev) \(Self.hash(body))")
    }

    private func pick() -> NoteID {
        ids[Int.random(in: 0..<ids.count, using: &rng)]
    }

    private static let words = [
        "note", "milk", "plan", "café", "naïve", "Straße", "日本語", "メモ", "🙂", "🚀", "todo", "- [ ]", "##",
        "résumé", "sync", "zürich", "笔记", "✅",
    ]

    /// About `bytes` bytes of text that starts with `token`.
    private func text(token: String, bytes: Int) -> Data {
        var text = token
        while text.utf8.count < bytes {
            text += Int.random(in: 0..<8, using: &rng) == 0 ? "\n" : " "
            text += Self.words[Int.random(in: 0..<Self.words.count, using: &rng)]
        }
        return Data((text + "\n").utf8)
    }

    static func hash(_ body: Data) -> String { SHA256.hexHash(body) }

    /// One line in one `write(2)`, so a kill never leaves half a report unflagged:
    /// the reader ignores a last line without its newline.
    private func report(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
        if line.hasPrefix("intent create ") || line.hasPrefix("intent edit ") {
            savesStarted += 1
            if savesStarted == options.stopInSave { transactionStop.arm() }
        }
    }
}

/// The stop of `--stop-in-save`: armed just before that save, it reports
/// `stopped` from inside the save's write transaction (the store's
/// `insideWriteTransaction`) and waits there until the test kills the child.
final class TransactionStop: Sendable {
    private let armed = Atomic<Bool>(false)

    func arm() { armed.store(true, ordering: .sequentiallyConsistent) }

    func reachedInsideTransaction() {
        guard armed.exchange(false, ordering: .sequentiallyConsistent) else { return }
        let line = Array("stopped\n".utf8)
        _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        while true { pause() }
    }
}

struct ChildError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
