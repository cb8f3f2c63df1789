import Foundation
import NotesModel
@testable import NotesStore
import ProcessKit
import SQLiteKit
import TestSupport
import Testing

/// Kills a child process that commits saves in a loop (`notesfs-crash-child`)
/// with SIGKILL at seeded moments, 50 times against one database, and
/// checks after every kill that nothing it reported is lost, that a save
/// killed inside its transaction left nothing, and that the outbox still
/// matches the notes.
///
/// Replay a failure with `NOTESFS_CRASH_SEED=<seed printed in the failure>`.
/// The child is found next to the test binary, or at `NOTESFS_CRASH_CHILD`.
@Suite struct CrashSafetyTests {
    static let runs = 50
    /// One run in five is killed between 0 and this many milliseconds after
    /// the child starts (start-up and migration). Two in five are killed once
    /// the child has reported a seeded number of saves, somewhere in the save
    /// loop; two in five while the child waits inside the transaction of a
    /// seeded save (it says so). The moments are events the child reports,
    /// so the kills land where they should however busy the machine is.
    static let killDelayMillisecondsMax = 250
    static let savesBeforeKill = 5...45
    static let defaultSeed: UInt64 = 20_240_601

    @Test func everySaveReportedBeforeASIGKILLIsStoredWithItsOutboxRow() async throws {
        let child = try #require(
            CrashChildBinary.locate(),
            """
            notesfs-crash-child was not found next to the test binary (\(CrashChildBinary.searchedDirectories));
            build it with 'swift build --build-tests' (or 'swift build --product notesfs-crash-child'),
            or set NOTESFS_CRASH_CHILD to its path.
            """)
        let seed = ProcessInfo.processInfo.environment["NOTESFS_CRASH_SEED"].flatMap(UInt64.init) ?? Self.defaultSeed
        var random = SplitMix64(seed: seed)
        let directory = try TemporaryDirectory(prefix: "notesfs-crash")
        defer { directory.remove() }
        let databasePath = directory.file("notes.sqlite")

        var model = CrashModel()
        var savesReported = 0
        var runsKilledWhileSaving = 0
        var runsKilledInsideATransaction = 0
        for run in 1...Self.runs {
            let context = "seed \(seed), run \(run) (replay with NOTESFS_CRASH_SEED=\(seed))"
            let delay = Int.random(in: 0...Self.killDelayMillisecondsMax, using: &random)
            let savesToWait = Int.random(in: Self.savesBeforeKill, using: &random)
            let moment: KillMoment
            switch Int.random(in: 1...5, using: &random) {
            case 1: moment = .after(milliseconds: delay)
            case 2, 3: moment = .afterSaves(savesToWait)
            default: moment = .insideSave(savesToWait)
            }
            let output = try await runChildAndKill(
                child, databasePath: databasePath, seed: seed, run: run, at: moment,
                directory: directory, context: context)
            guard let output else { return }
            let events = try #require(CrashEvent.parse(output), "\(context): the child printed a line not understood")
            let saves = events.filter { if case .saved = $0 { true } else { false } }.count
            savesReported += saves
            if saves > 0 { runsKilledWhileSaving += 1 }
            if case .insideSave = moment {
                #expect(events.last == .stopped, "\(context): the child did not stop inside its save's transaction")
                if events.last == .stopped { runsKilledInsideATransaction += 1 }
            }

            guard try checkStore(at: databasePath, events: events, model: &model, context: context) else { return }
        }
        // The test is only worth something when the kills really hit a busy writer.
        #expect(runsKilledWhileSaving >= Self.runs / 2, "only \(runsKilledWhileSaving) kills hit the save loop")
        #expect(runsKilledInsideATransaction >= 5, "only \(runsKilledInsideATransaction) kills inside a transaction")
        #expect(savesReported >= 500, "only \(savesReported) saves were reported in \(Self.runs) runs")
        #expect(model.live.count >= CrashModel.notesMinimum, "the child's notes should survive: \(model.live.count)")
    }

    enum KillMoment {
        case after(milliseconds: Int)
        /// Once the child printed this many `saved` lines (or after 60 s).
        case afterSaves(Int)
        /// Once the child stopped inside the transaction of this save (`stopped`).
        case insideSave(Int)
    }

    /// Runs the child, kills it at `moment`, and returns what it printed;
    /// nil (with an issue recorded) when it did not die by the kill.
    private func runChildAndKill(
        _ child: String, databasePath: String, seed: UInt64, run: Int, at moment: KillMoment,
        directory: TemporaryDirectory, context: String
    ) async throws -> Data? {
        let outputPath = directory.file("run-\(run).out")
        let errorPath = directory.file("run-\(run).err")
        // The child's own limit is far past the wait below: it must die by the kill.
        var arguments = [child, "--db", databasePath, "--seed", String(seed), "--run", String(run), "--max-seconds", "120"]
        if case .insideSave(let save) = moment { arguments += ["--stop-in-save", String(save)] }
        let child = try SpawnedProcess(
            arguments, options: .init(standardOutput: .file(outputPath), standardError: .file(errorPath)))
        switch moment {
        case .after(let milliseconds):
            try await Task.sleep(for: .milliseconds(milliseconds))
        case .afterSaves(let count):
            // An event with a generous ceiling.
            _ = try await waitUntil(60) {
                let printed = FileManager.default.contents(atPath: outputPath) ?? Data()
                return !child.isRunning
                    || String(decoding: printed, as: UTF8.self).components(separatedBy: "\nsaved ").count - 1 >= count
            }
        case .insideSave:
            _ = try await waitUntil(60) {
                let printed = FileManager.default.contents(atPath: outputPath) ?? Data()
                return !child.isRunning || String(decoding: printed, as: UTF8.self).hasSuffix("\nstopped\n")
            }
        }
        // Killed here unless it ended by itself (which the check below reports).
        child.kill()
        let status = child.exitStatus ?? -1
        guard status == 128 + SIGKILL else {
            let message = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            Issue.record("\(context): the child was not killed by SIGKILL but ended with \(status): \(message)")
            return nil
        }
        return FileManager.default.contents(atPath: outputPath) ?? Data()
    }

    /// Opens the store the child left behind and checks it against what the
    /// child reported; updates `model` to the store's state. False on failure.
    private func checkStore(
        at path: String, events: [CrashEvent], model: inout CrashModel, context: String
    ) throws -> Bool {
        let store = try NotesStore(path: path)
        let integrity = try store.integrityCheck()
        #expect(integrity == ["ok"], "\(context): integrity check")

        let database = try Connection(path: path, options: Connection.Options(mode: .readOnly))
        let stored = try CrashModel.StoredNote.loadLive(database)
        var problems = model.apply(events, stored: stored)
        for invariant in OutboxInvariant.all {
            let violations = try database.query(invariant.sql) { $0.string(0) }
            if !violations.isEmpty {
                problems.append("\(invariant.description): \(violations.prefix(5).joined(separator: ", "))")
            }
        }
        // The search index, brought up to date after the crash, finds each note by a token of its body.
        for (id, note) in stored.sorted(by: { $0.key < $1.key }).prefix(8) {
            guard let token = note.firstToken else { continue }
            let hits = try store.search(token, limit: 1_000).map(\.noteID.description)
            if !hits.contains(id) { problems.append("search for '\(token)' does not find note \(id)") }
        }
        for problem in problems { Issue.record("\(context): \(problem)") }
        return problems.isEmpty && integrity == ["ok"]
    }
}

/// One line the child printed (see `CrashChild` for the protocol).
fileprivate enum CrashEvent: Equatable {
    case ready
    case intentCreate(sha: String, title: String)
    case intentEdit(id: String, sha: String)
    case intentDelete(id: String)
    case saved(id: String, rev: Int64, sha: String)
    case deleted(id: String)
    case synced
    /// Inside a save's transaction, waiting for the kill.
    case stopped

    /// Complete lines only: a kill can cut the last line short. Nil on an unknown line.
    static func parse(_ output: Data) -> [CrashEvent]? {
        var lines = String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // after the last newline: empty, or a line the kill cut short
        var events: [CrashEvent] = []
        for line in lines {
            let fields = line.split(separator: " ", maxSplits: 3).map(String.init)
            switch (fields.first, fields.count) {
            case ("ready", 1): events.append(.ready)
            case ("intent", 4) where fields[1] == "create": events.append(.intentCreate(sha: fields[2], title: fields[3]))
            case ("intent", 4) where fields[1] == "edit": events.append(.intentEdit(id: fields[2], sha: fields[3]))
            case ("intent", 3) where fields[1] == "delete": events.append(.intentDelete(id: fields[2]))
            case ("saved", 4):
                guard let rev = Int64(fields[2]) else { return nil }
                events.append(.saved(id: fields[1], rev: rev, sha: fields[3]))
            case ("deleted", 2): events.append(.deleted(id: fields[1]))
            case ("synced", 3): events.append(.synced)
            case ("stopped", 1): events.append(.stopped)
            default: return nil
            }
        }
        return events
    }
}

/// The live notes the store must hold: what the previous check found, plus the
/// saves reported since. Only the child's last intent may be in either state.
fileprivate struct CrashModel {
    /// The child keeps at least this many notes alive once it has made them.
    static let notesMinimum = 8

    struct Version: Equatable, CustomStringConvertible {
        var rev: Int64
        var sha: String
        var description: String { "rev \(rev) sha \(sha.prefix(12))" }
    }

    struct StoredNote {
        var title: String
        var version: Version
        /// The first `zqk<run>n<counter>` token in the body (each save writes a new one).
        var firstToken: String?

        static func loadLive(_ db: Connection) throws -> [String: StoredNote] {
            var notes: [String: StoredNote] = [:]
            try db.forEachRow("SELECT id, title, body, local_rev FROM notes WHERE deleted = 0", arguments: []) { row in
                let body = row.data(2)
                notes[row.string(0)] = StoredNote(
                    title: row.string(1), version: Version(rev: row.int64(3), sha: SHA256.hexHash(body)),
                    firstToken: token(in: body))
                return true
            }
            return notes
        }

        static func token(in body: Data) -> String? {
            let words = String(decoding: body, as: UTF8.self).split { !$0.isLetter && !$0.isNumber }
            return words.first { word in
                guard word.hasPrefix("zqk") else { return false }
                let parts = word.dropFirst(3).split(separator: "n", omittingEmptySubsequences: false)
                return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
            }.map(String.init)
        }
    }

    /// Live notes by id.
    var live: [String: Version] = [:]

    /// Replays `events` on the model, compares with `stored`, then takes
    /// `stored` as the new state. Returns what did not match.
    mutating func apply(_ events: [CrashEvent], stored: [String: StoredNote]) -> [String] {
        var problems: [String] = []
        var expected = live
        var intent: CrashEvent?
        // Killed inside the last intent's transaction: it must have left nothing.
        var stoppedInsideIntent = false
        for event in events {
            switch event {
            case .stopped:
                stoppedInsideIntent = intent != nil
                if intent == nil { problems.append("stopped outside a save") }
            case .ready, .synced:
                if let intent { problems.append("\(intent) was not reported before the next step") }
                intent = nil
            case .intentCreate, .intentEdit, .intentDelete:
                if let intent { problems.append("\(intent) was not reported before \(event)") }
                intent = event
            case .saved(let id, let rev, let sha):
                switch intent {
                case .intentCreate(let intendedSHA, _)? where intendedSHA == sha && expected[id] == nil:
                    if rev != 1 { problems.append("new note \(id) reported rev \(rev), not 1") }
                case .intentEdit(id, sha)?:
                    if let old = expected[id], rev != old.rev + 1 {
                        problems.append("note \(id) went from rev \(old.rev) to \(rev) in one save")
                    }
                default:
                    problems.append("saved \(id) does not match the intent \(String(describing: intent))")
                }
                expected[id] = Version(rev: rev, sha: sha)
                intent = nil
            case .deleted(let id):
                if intent != .intentDelete(id: id) || expected[id] == nil {
                    problems.append("deleted \(id) does not match the intent \(String(describing: intent))")
                }
                expected[id] = nil
                intent = nil
            }
        }

        // Every reported save is there, exactly; only the unreported intent may differ.
        for (id, version) in expected.sorted(by: { $0.key < $1.key }) {
            let found = stored[id]?.version
            if found == version { continue }
            switch intent {
            case .intentEdit(id, let sha)? where !stoppedInsideIntent && found == Version(rev: version.rev + 1, sha: sha):
                continue
            case .intentDelete(id)? where found == nil:
                continue
            default:
                problems.append(
                    "save lost: note \(id) was reported at \(version), the store has \(found.map(\.description) ?? "no live note")")
            }
        }
        let unexpected = stored.filter { expected[$0.key] == nil }
        if !unexpected.isEmpty {
            var allowed = false
            if case .intentCreate(let sha, let title)? = intent, !stoppedInsideIntent, unexpected.count == 1,
                let only = unexpected.first
            {
                allowed = only.value.title == title && only.value.version == Version(rev: 1, sha: sha)
            }
            if !allowed {
                problems.append("notes nobody saved: \(unexpected.keys.sorted()), last intent \(String(describing: intent))")
            }
        }
        live = stored.mapValues(\.version)
        return problems
    }
}

/// What must hold between notes, folders, names and the outbox after any
/// crash. Each query returns the ids that break the rule.
fileprivate struct OutboxInvariant {
    var description: String
    var sql: String

    static let all: [OutboxInvariant] = [
        OutboxInvariant(
            description: "outbox rows without their note",
            sql: """
                SELECT entity_id FROM outbox o WHERE entity_kind = 'note'
                AND NOT EXISTS (SELECT 1 FROM notes n WHERE n.id = o.entity_id)
                """),
        OutboxInvariant(
            description: "outbox rows without their folder",
            sql: """
                SELECT entity_id FROM outbox o WHERE entity_kind = 'folder'
                AND NOT EXISTS (SELECT 1 FROM folders f WHERE f.id = o.entity_id)
                """),
        OutboxInvariant(
            description: "dirty never-synced notes without an outbox row",
            sql: """
                SELECT id FROM notes n WHERE server_version IS NULL AND local_rev <> synced_rev
                AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = n.id)
                """),
        OutboxInvariant(
            description: "dirty notes without an outbox row",
            sql: """
                SELECT id FROM notes n WHERE local_rev <> synced_rev
                AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = n.id)
                """),
        OutboxInvariant(
            description: "notes edited after their last freeze without a pending row",
            sql: """
                SELECT id FROM notes n WHERE local_rev > max(synced_rev, coalesce((SELECT max(frozen_rev) FROM outbox o
                    WHERE o.entity_kind = 'note' AND o.entity_id = n.id AND o.state = 'in_flight'), 0))
                AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = n.id
                    AND o.state = 'pending')
                """),
        OutboxInvariant(
            description: "clean notes with an outbox row",
            sql: """
                SELECT id FROM notes n WHERE local_rev = synced_rev
                AND EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = n.id)
                """),
        OutboxInvariant(
            description: "in-flight rows frozen at a revision the note never had, or already synced",
            sql: """
                SELECT o.entity_id FROM outbox o JOIN notes n ON n.id = o.entity_id
                WHERE o.entity_kind = 'note' AND o.state = 'in_flight'
                AND (o.frozen_rev IS NULL OR o.frozen_rev > n.local_rev OR o.frozen_rev <= n.synced_rev)
                """),
        OutboxInvariant(
            description: "dirty folders without an outbox row",
            sql: """
                SELECT id FROM folders f WHERE local_rev <> synced_rev
                AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_kind = 'folder' AND o.entity_id = f.id)
                """),
        OutboxInvariant(
            description: "live notes with no name in any directory",
            sql: """
                SELECT id FROM notes n WHERE deleted = 0
                AND NOT EXISTS (SELECT 1 FROM names m WHERE m.entry_kind = 'note' AND m.entry_id = n.id)
                """),
        OutboxInvariant(
            description: "live folders with no name in any directory",
            sql: """
                SELECT id FROM folders f WHERE deleted = 0
                AND NOT EXISTS (SELECT 1 FROM names m WHERE m.entry_kind = 'folder' AND m.entry_id = f.id)
                """),
    ]
}

/// Finds the `notesfs-crash-child` binary built beside the test binary.
fileprivate enum CrashChildBinary {
    static let name = "notesfs-crash-child"

    static var searchedDirectories: [String] {
        var directories: [String] = []
        if let executable = Bundle.main.executableURL {
            directories.append(executable.resolvingSymlinksInPath().deletingLastPathComponent().path)
        }
        if let first = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent().path)
        }
        // On Darwin the test binary sits inside an .xctest bundle in the products directory.
        directories += directories.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
        return directories
    }

    static func locate() -> String? {
        if let path = ProcessInfo.processInfo.environment["NOTESFS_CRASH_CHILD"] {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        return searchedDirectories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
