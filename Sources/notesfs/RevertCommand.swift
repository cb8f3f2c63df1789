import Foundation
import FuseKit
import NotesFS
import NotesModel
import NotesStore
import SyncEngine
import SyncProtocol
import Synchronization

/// `notesfs revert --to TIME [PATH...] [--yes]`.
struct RevertCommand: Command {
    static let name = "revert"
    static let summary = "Make notes and folders as they were at a past moment, on every machine"
    static let help = """
        Usage: notesfs revert --to TIME [PATH...] [--yes] [--data DIR | --profile NAME]

        Makes the notes and folders within each PATH (a note or a folder, as the
        mount shows it; none: everything) as they were at TIME, from the server's
        history: changed notes get their old text, name and folder back, deleted
        ones come back with the same id, and what was made since goes to the
        trash. These are ordinary edits: they sync to every machine.

        TIME is local time: 2026-12-03T13:10, 2026-12-03T13:10:05,
        '2026-12-03 13:10' or 2026-12-03 (midnight).

        It prints what it will change and asks first. Nothing is lost: the text
        it replaces stays in the server's history, so a revert is undone by
        reverting to the moment before it (the command prints that moment).
        A running mount syncs first, so the revert starts from what the server
        has, and sends the result at once; without one, the next mount sends it.
          --yes     revert without asking
        """
    static let spec = ArgumentSpec(
        options: DataLocation.options.union(["--to"]), flags: ["--yes"], positional: 0...1_000)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let location = try DataLocation(arguments)
        guard let timeText = arguments.option("--to") else {
            throw CommandError.usage("revert needs --to TIME (for example --to 2026-12-03T13:10)")
        }
        guard let moment = MomentTime.parse(timeText.trimmingCharacters(in: .whitespaces)) else {
            throw CommandError.usage(
                "'\(timeText)' is not a time; write it as 2026-12-03T13:10, 2026-12-03T13:10:05 or 2026-12-03")
        }
        guard moment <= Date() else { throw CommandError.usage("\(timeText) is in the future; revert goes back in time") }
        guard let profile = try SyncProfile.load(location) else {
            _ = try location.openStore(create: false)
            throw CommandError.failed(
                "revert takes notes back from the server's history, and this notes folder has no server. "
                    + "Its own saves are in .notesfs/history and 'notesfs restore'; deleted notes in 'notesfs trash'.")
        }
        let socket = SyncControlSocket.path(location)
        let mounted = try syncFirst(socket: socket)
        let store = try location.openStore(create: false)
        if !mounted, try store.admin.status().pendingCount > 0 {
            throw CommandError.failed(
                "this machine has changes the server has not seen yet, and no mount is running to send them. "
                    + "Mount the profile (it syncs by itself), then revert: a revert must start from what the "
                    + "server has, so that it can be undone.")
        }
        let paths = arguments.positional.map { relativePath($0, location: location) }
        let past = try pastTree(at: moment, profile: profile, device: try store.admin.device().id)
        let plan = try store.admin.revertPlan(to: past, within: paths)
        let when = MomentTime.name(moment, seconds: Int(moment.timeIntervalSince1970) % 60 != 0)
        if NotesStore.pastCount(past, within: paths) == 0, plan.contains(where: { $0.action == .delete }),
            plan.allSatisfy({ $0.action == .delete || $0.action == .keep })
        {
            // Nothing of the moment is within the paths: a revert would only delete.
            throw CommandError.failed(
                "at \(when) there was nothing \(paths.isEmpty ? "in your notes" : "at " + paths.joined(separator: ", ")) "
                    + "(the server's history has no note or folder there then), so a revert would only delete "
                    + "\(plan.filter { $0.action == .delete }.count) notes and folders. Pick a later time; to delete them, "
                    + "use rm. Nothing changed.")
        }
        guard !plan.isEmpty else {
            console.out("Nothing to change: \(paths.isEmpty ? "every note and folder is" : paths.joined(separator: ", ") + " \(paths.count == 1 ? "is" : "are")") as it was at \(when).")
            return 0
        }
        for step in plan { console.out("  " + step.description) }
        if !arguments.has("--yes") {
            let count = plan.filter { $0.action != .keep }.count
            let yes = try console.confirm(
                "Make \(count) change\(count == 1 ? "" : "s") to go back to \(when), on every machine?",
                withoutTerminal: "revert changes \(count) note\(count == 1 ? "" : "s") and folders on every machine, "
                    + "so it asks first; on a terminal answer the question, elsewhere add --yes")
            guard yes else {
                console.out("Nothing changed.")
                return 1
            }
        }
        // The undo moment is printed to the second: wait for the next whole
        // second, so everything before the revert is at or before it and
        // nothing of the revert is.
        let before = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 0.001).rounded(.up))
        Thread.sleep(until: before.addingTimeInterval(0.001))
        let done = try store.admin.revert(to: past, within: paths)
        let count = done.filter { $0.action != .keep }.count
        console.out("Reverted to \(when): \(count) change\(count == 1 ? "" : "s").")
        let undoPaths = paths.map { " '\($0)'" }.joined()
        console.out("To undo: notesfs revert --to '\(MomentTime.name(before))'\(undoPaths)")
        if mounted {
            _ = SyncControlSocket.request(path: socket, "sync") { _ in }
        } else {
            console.error("No mount is running: the next mount sends the revert to your other machines.")
        }
        return 0
    }

    /// Asks a running mount to sync and waits; false when no mount runs.
    private static func syncFirst(socket: String) throws -> Bool {
        var final: String?
        guard SyncControlSocket.request(path: socket, "sync wait", onLine: { final = $0 }) else { return false }
        switch final {
        case "ok"?: return true
        case let line? where line.hasPrefix("held "):
            throw CommandError.failed(
                "the mount holds deletions (\(line.dropFirst("held ".count))); settle them with 'notesfs sync "
                    + "--allow-mass-delete' or '--restore-held' first, then revert")
        case let line?:
            let reason = line.hasPrefix("failed ") ? String(line.dropFirst("failed ".count)) : line
            throw CommandError.failed(
                "revert needs the server's history, and the sync before it failed: \(reason). Nothing changed.")
        case nil:
            throw CommandError.failed("the mount closed the connection without an answer; see mount.log")
        }
    }

    /// Every note and folder as the server had it at `moment`.
    private static func pastTree(at moment: Date, profile: SyncProfile, device: DeviceID) throws -> [PastEntity] {
        let transport = HTTPSyncTransport(
            baseURL: try profile.serverURL(), token: try profile.token().text, device: device,
            caFile: try profile.checkedCAFile())
        let listing: HistoryListing<HistoricEntity>
        do {
            listing = try waitFor { try await transport.wholeTree(at: moment) }
        } catch let error as TransportError {
            throw CommandError.failed("cannot read the server's history: \(error). Nothing changed.")
        }
        if let keptSince = listing.keptSince, keptSince > moment {
            throw CommandError.failed(
                "the server's history is whole only from \(MomentTime.name(keptSince)) "
                    + "(older versions were trimmed); pick a later time. Nothing changed.")
        }
        return try listing.items.compactMap { entity -> PastEntity? in
            guard !entity.deleted else { return nil }
            switch entity.kind {
            case .note:
                guard let note = entity.note, let body = note.bodyBytes() else {
                    throw CommandError.failed("the server's history holds an unreadable version of note \(entity.id)")
                }
                return PastEntity(
                    id: entity.id, content: .note(NoteContent(title: note.title, body: body, folderID: note.folderId)))
            case .folder:
                guard let folder = entity.folder else {
                    throw CommandError.failed("the server's history holds an unreadable version of folder \(entity.id)")
                }
                return PastEntity(id: entity.id, content: .folder(FolderContent(name: folder.name, parentID: folder.parentId)))
            }
        }
    }

    /// A PATH as the mount shows it, relative to the mount's root: an
    /// absolute path inside this profile's mount loses the mount point.
    static func relativePath(_ argument: String, location: DataLocation) -> String {
        let absolute = argument.hasPrefix("/")
            ? argument : FileManager.default.currentDirectoryPath + "/" + argument
        let source = "notesfs:" + location.directory.path
        for mount in MountTable.mounts() where mount.source == source {
            let root = mount.mountpoint.hasSuffix("/") ? mount.mountpoint : mount.mountpoint + "/"
            if absolute.hasPrefix(root) { return String(absolute.dropFirst(root.count)) }
        }
        return argument.split(separator: "/").joined(separator: "/")
    }

    /// Runs `work` on the concurrency pool and waits for it: the command line is synchronous.
    static func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await work()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0 }?.get() ?? { throw CommandError.failed("the request ended without an answer") }()
    }
}
