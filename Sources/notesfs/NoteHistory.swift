import Foundation
import FuseKit
import NotesFS
import NotesModel
import NotesStore
import SyncEngine
import SyncProtocol

/// What `notesfs log` and `notesfs show` share: finding the note a PATH
/// names, and asking the server's history, or else this machine's records.
struct NoteHistory {
    let store: NotesStore
    let location: DataLocation
    /// The server's history, when the profile has a server.
    let transport: HTTPSyncTransport?

    init(_ arguments: ParsedArguments) throws {
        location = try DataLocation(arguments)
        store = try location.openStore(create: false)
        if let profile = try SyncProfile.load(location) {
            transport = HTTPSyncTransport(
                baseURL: try profile.serverURL(), token: try profile.token().text, caFile: try profile.checkedCAFile())
        } else {
            transport = nil
        }
    }

    /// Why a command answers from this machine's records: no server, or the
    /// server's error.
    static let noServer = "this notes folder has no server"

    /// `path` from the root of the notes: a path inside a mounted notesfs
    /// (absolute, or relative to a working directory inside one), else taken
    /// as a path from the root already. Never ends or starts with `/`.
    static func pathFromRoot(_ path: String) -> String {
        let current = FileManager.default.currentDirectoryPath
        let absolute = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: current, isDirectory: true))
            .standardizedFileURL.path
        let mount = MountTable.mounts()
            .filter { $0.fileSystemType.hasSuffix("notesfs") && absolute.hasPrefix($0.mountpoint + "/") }
            .max { $0.mountpoint.count < $1.mountpoint.count }
        let inMount = mount.map { String(absolute.dropFirst($0.mountpoint.count)) } ?? path
        return inMount.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
            .joined(separator: "/")
    }

    /// The note at `path` now, else the newest one deleted from there (the
    /// trash), else the newest one whose text the local history kept from there.
    func noteID(atPath path: String) throws -> NoteID? {
        if let id = try store.admin.noteID(atPath: path) { return id }
        if let entry = try store.admin.trash.entries().first(where: { $0.path == path }) { return entry.noteID }
        return try store.admin.history().first(where: { $0.path == path })?.noteID
    }

    /// Runs `body` against the server; nil with the reason when there is no
    /// server or it cannot be asked.
    func askServer<T: Sendable>(
        _ body: @escaping @Sendable (HTTPSyncTransport) async throws -> T
    ) -> Result<T, OfflineReason> {
        guard let transport else { return .failure(OfflineReason(Self.noServer)) }
        do {
            return .success(try ServerData.blockingAwait { try await body(transport) })
        } catch {
            return .failure(OfflineReason("the server could not be asked: \(UserFacingError.describe(error))"))
        }
    }

    /// Names the machines that made `versions` (`DeviceLabels`).
    func deviceLabels(for versions: [VersionSummary]) throws -> DeviceLabels {
        DeviceLabels(versions: versions, this: try store.admin.device())
    }

    /// The tree of `at` from this machine's records.
    func offlineTree(at: Date) throws -> (tree: MomentTree, laterTexts: Int) {
        let nanoseconds = Int64((at.timeIntervalSince1970 * 1e9).rounded(.down))
        let (items, laterTexts) = OfflineMoment.items(at: nanoseconds, from: try store.tree.momentRecords())
        return (MomentTree(items: items), laterTexts)
    }
}

/// Why an answer comes from this machine alone.
struct OfflineReason: Error {
    let words: String
    init(_ words: String) { self.words = words }
}
