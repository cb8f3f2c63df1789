import Foundation
import NotesModel
@testable import NotesStore
import TestSupport
import Testing

/// The `notesfs` binary as a person runs it: status, search, sync, export
/// and restore say what is true, and every text they print ends in a newline.
@Suite(.serialized) struct CommandOutputTests {
    /// A data directory with notes in folders, files kept only here, and one history entry.
    struct Profile {
        let directory: TemporaryDirectory
        var data: String { directory.file("data") }
        let historyEntry: Int64

        init() throws {
            directory = try TemporaryDirectory(prefix: "notesfs-commands")
            try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
            let store = try NotesStore(path: directory.file("data") + "/notes.sqlite")
            let work = try store.makeFolders(path: ["Work"])
            try store.createNote(in: .root, title: "Pancakes.md", body: Data(utf8: "Sunday breakfast\n"))
            try store.createNote(in: work, title: "kitchen.md", body: Data(utf8: "fry in olive oil, pancakes later\n"))
            let plan = try store.createNote(in: work, title: "plan.md", body: Data(utf8: "precious plan\n"))
            try store.truncate(.note(plan), to: 0)
            historyEntry = try #require(try store.history(for: plan).first).seq
            _ = try store.createFile(in: .root, name: ".plan")
            _ = try store.createFile(in: work, name: "~draft.md")
        }

        func run(_ arguments: [String]) throws -> MountFixture.Result {
            guard let binary = MountFixture.binaryPath else { throw MountFixture.Failure("notesfs binary not built") }
            return try MountFixture.run([binary] + arguments)
        }

        func remove() { directory.remove() }
    }

    /// True when the binary is there, or must be (CI sets NOTESFS_REQUIRE_ALL_TESTS=1: the tests then fail).
    static var binaryBuilt: Bool {
        if MountFixture.binaryPath != nil { return true }
        if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" { return true }
        FileHandle.standardError.write(Data("⚠️  SKIPPING command tests: the notesfs binary was not built\n".utf8))
        return false
    }

    @Test(.enabled(if: binaryBuilt)) func everyTextOutputOfEveryCommandEndsWithANewline() throws {
        let profile = try Profile()
        defer { profile.remove() }
        let data = ["--data", profile.data]
        let overview = try profile.run(["--help"])
        let names = overview.standardOutput.split(separator: "\n")
            .drop { !$0.hasPrefix("Commands:") }.dropFirst()
            .prefix { $0.hasPrefix("  ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(names.contains("status") && names.contains("search") && names.contains("restore"), "\(names)")
        var runs: [[String]] = [[], ["--help"], ["--version"], ["no-such-command"]]
        runs += names.map { [$0, "--help"] }
        runs += [
            ["status"] + data, ["status", "--json"] + data, ["search", "pancake"] + data,
            ["search", "--json", "pancake"] + data, ["search", "nothing-matches-this"] + data,
            ["search", "--in", "Nowhere", "x"] + data, ["search", "***"] + data, ["sync"] + data,
            ["sync", "--wait"] + data, ["export", profile.directory.file("out")] + data,
            ["export", profile.directory.file("out-all"), "--all"] + data, ["restore"] + data,
            ["restore", "\(profile.historyEntry)", "--to", profile.directory.file("copy.md")] + data,
            ["restore", "999999"] + data, ["status", "--data", profile.directory.file("missing")],
            ["trash"] + data, ["trash", "list"] + data, ["trash", "restore", "Nowhere/x.md"] + data,
            ["trash", "restore"] + data, ["trash", "empty"] + data, ["trash", "empty", "--yes"] + data,
            ["trash", "empty", "--yes"] + data, ["trash", "frobnicate"] + data,
            ["log", "Work/plan.md"] + data, ["log", "Nowhere/x.md"] + data, ["log"] + data,
            ["show", "Work/plan.md@2020-01-01"] + data, ["show", "Work/plan.md@noon"] + data,
            ["show", "Work/plan.md"] + data,
            ["revert"] + data, ["revert", "--to", "2026-01-01"] + data, ["revert", "--to", "soon"] + data,
            ["revert", "--to", "2999-01-01T10:00"] + data,
        ]
        for arguments in runs {
            let result = try profile.run(arguments)
            #expect(
                result.standardOutput.isEmpty || result.standardOutput.hasSuffix("\n"),
                "stdout of notesfs \(arguments.joined(separator: " ")): \(result.standardOutput.suffix(80))")
            #expect(
                result.standardError.isEmpty || result.standardError.hasSuffix("\n"),
                "stderr of notesfs \(arguments.joined(separator: " ")): \(result.standardError.suffix(80))")
            #expect(!(result.standardOutput + result.standardError).isEmpty, "notesfs \(arguments) said nothing")
        }
    }

    @Test(.enabled(if: binaryBuilt)) func statusOfAnOfflineFolderSaysSoAndSyncSaysHowToAddAServer() throws {
        let profile = try Profile()
        defer { profile.remove() }
        let status = try profile.run(["status", "--data", profile.data])
        #expect(status.status == 0)
        #expect(status.standardOutput.hasPrefix("Offline notes folder: 3 notes in 1 folder, kept only on this machine"))
        #expect(status.standardOutput.contains("2 files kept only here (never synced): .plan, Work/~draft.md\n"))
        #expect(!status.standardOutput.contains("Not yet synced"))
        for arguments in [["sync"], ["sync", "--wait"]] {
            let sync = try profile.run(arguments + ["--data", profile.data])
            #expect(sync.status == 1)
            #expect(sync.standardError.contains("has no server"), "\(sync.standardError)")
            #expect(sync.standardError.contains("--server URL --token-file"))
            #expect(!sync.standardError.contains("Mount it first"))
        }
    }

    @Test(.enabled(if: binaryBuilt)) func logAndShowOfAFolderWithoutAServerAnswerFromThisMachineAndSaySo() throws {
        let profile = try Profile()
        defer { profile.remove() }
        let data = ["--data", profile.data]
        let log = try profile.run(["log", "/Work/plan.md"] + data)
        #expect(log.status == 0, "\(log.standardError)")
        #expect(log.standardError.hasPrefix("Offline: this notes folder has no server."), "\(log.standardError)")
        let lines = log.standardOutput.split(separator: "\n")
        #expect(lines.first == "/Work/plan.md: this machine's view, newest first", "\(log.standardOutput)")
        #expect(lines.dropFirst().first == "now  0 bytes  +0 -1", "\(log.standardOutput)")
        #expect(lines.last?.contains("14 bytes, kept (truncated)  (oldest known here)") == true, "\(log.standardOutput)")
        #expect(lines.count == 3)

        let now = MomentTime.name(Date().addingTimeInterval(2))
        let show = try profile.run(["show", "Pancakes.md@" + now] + data)
        #expect(show.status == 0 && show.standardOutput == "Sunday breakfast\n", "\(show.standardError)")
        #expect(show.standardError.contains("this machine's view only"), "\(show.standardError)")
        let before = try profile.run(["show", "Pancakes.md@2020-01-01"] + data)
        #expect(before.status == 1 && before.standardError.contains("no note at this path then"), "\(before.standardError)")
        let badTime = try profile.run(["show", "Pancakes.md@yesterday"] + data)
        #expect(badTime.status == 2 && badTime.standardError.contains("YYYY-MM-DDTHH:MM"), "\(badTime.standardError)")
        let noTime = try profile.run(["show", "Pancakes.md"] + data)
        #expect(noTime.status == 2 && noTime.standardError.contains("PATH@TIME"), "\(noTime.standardError)")
        let missing = try profile.run(["log", "Nowhere/x.md"] + data)
        #expect(missing.status == 1 && missing.standardError.contains("no note is at /Nowhere/x.md"))
    }

    @Test(.enabled(if: binaryBuilt)) func searchFindsStemsPhrasesAndNotesInAFolder() throws {
        let profile = try Profile()
        defer { profile.remove() }
        let data = ["--data", profile.data]
        let stems = try profile.run(["search", "pancake"] + data)
        #expect(stems.status == 0)
        // The note whose title matches comes first.
        #expect(stems.standardOutput == """
            /Pancakes.md
                Sunday breakfast
            /Work/kitchen.md
                fry in olive oil, [pancakes] later

            """, "\(stems.standardOutput)")
        let phrase = try profile.run(["search", "olive oil"] + data)
        #expect(phrase.standardOutput.hasPrefix("/Work/kitchen.md\n"))
        #expect(try profile.run(["search", "oil olive"] + data).standardOutput.isEmpty)
        #expect(try profile.run(["search", "\"oil olive\""] + data).standardOutput.isEmpty)
        #expect(try profile.run(["search", "oil", "olive"] + data).standardOutput.hasPrefix("/Work/kitchen.md\n"))
        let inWork = try profile.run(["search", "--in", "Work", "panc*"] + data)
        #expect(inWork.standardOutput.hasPrefix("/Work/kitchen.md\n"))
        #expect(!inWork.standardOutput.contains("/Pancakes.md"))
        let nowhere = try profile.run(["search", "--in", "Nowhere", "x"] + data)
        #expect(nowhere.status == 1)
        #expect(nowhere.standardError.contains("no folder 'Nowhere'"))
    }

    @Test(.enabled(if: binaryBuilt)) func exportSaysWhatItLeftOutAndAllTakesItToo() throws {
        let profile = try Profile()
        defer { profile.remove() }
        let out = profile.directory.file("out")
        let export = try profile.run(["export", out, "--data", profile.data])
        #expect(export.status == 0)
        #expect(
            export.standardOutput == "Exported 3 notes in 1 folder to \(out). Left out 2 files kept only on this "
                + "machine (.plan, Work/~draft.md); add --all to include them.\n", "\(export.standardOutput)")
        #expect(!FileManager.default.fileExists(atPath: out + "/.plan"))
        #expect(FileManager.default.fileExists(atPath: out + "/Work/kitchen.md"))
        let all = profile.directory.file("all")
        let everything = try profile.run(["export", all, "--all", "--data", profile.data])
        #expect(
            everything.standardOutput
                == "Exported 3 notes in 1 folder and 2 files kept only on this machine to \(all).\n")
        #expect(FileManager.default.fileExists(atPath: all + "/.plan"))
        #expect(FileManager.default.fileExists(atPath: all + "/Work/~draft.md"))
        // Again, over the first export: files are replaced.
        #expect(try profile.run(["export", all, "--all", "--data", profile.data]).status == 0)
    }

    @Test(.enabled(if: binaryBuilt)) func restoreListsPathAndTimeAndPutsTextBackInItsFolder() throws {
        let profile = try Profile()
        defer { profile.remove() }
        let data = ["--data", profile.data]
        let listing = try profile.run(["restore"] + data)
        #expect(listing.status == 0)
        let line = try #require(listing.standardOutput.split(separator: "\n").first.map(String.init))
        #expect(line.hasPrefix("#\(profile.historyEntry)  20"), "\(line)")
        #expect(line.contains("  truncated  /Work/plan.md  (14 bytes)"), "\(line)")
        // A copy elsewhere leaves the note alone and never overwrites a file.
        let copy = profile.directory.file("copy.md")
        let copied = try profile.run(["restore", "\(profile.historyEntry)", "--to", copy] + data)
        #expect(copied.status == 0, "\(copied.standardError)")
        #expect(try String(contentsOfFile: copy, encoding: .utf8) == "precious plan\n")
        let again = try profile.run(["restore", "\(profile.historyEntry)", "--to", copy] + data)
        #expect(again.status == 1)
        #expect(again.standardError.contains("never overwrites"))
        let intoDirectory = try profile.run(["restore", "\(profile.historyEntry)", "--to", profile.directory.path] + data)
        #expect(intoDirectory.standardOutput.contains(profile.directory.file("plan.md")))
        // The note is gone: back into its own folder.
        do {
            let store = try NotesStore(path: profile.data + "/notes.sqlite")
            let work = try #require(try store.lookup(in: .root, name: "Work")?.ref.directory)
            try store.removeFile(in: work, name: "plan.md")
        }
        let restored = try profile.run(["restore", "\(profile.historyEntry)"] + data)
        #expect(restored.standardOutput == "Restored entry \(profile.historyEntry) into /Work/plan.md.\n")
    }

    @Test(.enabled(if: binaryBuilt)) func trashListsDeletedNotesRestoresThemAndEmptiesOnlyWhenAsked() throws {
        let profile = try Profile()
        defer { profile.remove() }
        let data = ["--data", profile.data]
        #expect(try profile.run(["trash"] + data).standardOutput.hasPrefix("The trash is empty"))
        let kitchen: NoteID
        do {
            let store = try NotesStore(path: profile.data + "/notes.sqlite")
            let work = try #require(try store.lookup(in: .root, name: "Work")?.ref.directory)
            guard case .note(let id) = try #require(try store.lookup(in: work, name: "kitchen.md")).ref else { return }
            kitchen = id
            try store.removeFile(in: work, name: "kitchen.md")
            try store.removeFile(in: .root, name: "Pancakes.md")
        }
        let listing = try profile.run(["trash", "list"] + data)
        let lines = listing.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0].hasSuffix("  this machine  /Pancakes.md  (17 bytes)"), "\(lines)")
        #expect(lines[1].hasSuffix("  this machine  /Work/kitchen.md  (33 bytes)") && lines[1].hasPrefix("20"))
        #expect(listing.standardError.contains("notesfs trash restore PATH"))

        let restored = try profile.run(["trash", "restore", ".notesfs/trash/Work/kitchen.md", "Gone.md"] + data)
        #expect(restored.status == 1)
        #expect(restored.standardOutput == "Restored /Work/kitchen.md.\n")
        #expect(restored.standardError.contains("'Gone.md' is not in the trash"))
        #expect(try NotesStore(path: profile.data + "/notes.sqlite").noteID(atPath: "/Work/kitchen.md") == kitchen)

        let refused = try profile.run(["trash", "empty"] + data)
        #expect(refused.status == 1 && refused.standardError.contains("add --yes"), "\(refused.standardError)")
        let emptied = try profile.run(["trash", "empty", "--yes"] + data)
        #expect(emptied.standardOutput == "Emptied the trash: 1 note forgotten on this machine.\n")
        #expect(try profile.run(["trash"] + data).standardOutput.hasPrefix("The trash is empty"))
    }
}

/// The same, mounted: an offline mount's status, and `sync` never says "Mount it first".
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct MountedCommandOutputTests {
    @Test func aMountedOfflineFolderSaysItHasNoServer() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        let status = try fixture.sh("printf 'x\\n' > a.md && printf 'y\\n' > .plan && cat .notesfs/status")
        #expect(status.hasPrefix("Offline notes folder: 1 note in 0 folders, kept only on this machine"), "\(status)")
        #expect(status.hasSuffix("1 file kept only here (never synced): .plan\n"), "\(status)")
        guard let binary = MountFixture.binaryPath else { return }
        let sync = try MountFixture.run([binary, "sync", "--data", fixture.dataDirectory])
        #expect(sync.status == 1)
        #expect(sync.standardError.contains("has no server"), "\(sync.standardError)")
        #expect(!sync.standardError.contains("Mount it first"))
        let command = try MountFixture.run([binary, "status", "--data", fixture.dataDirectory])
        #expect(command.standardOutput == status)
    }
}
