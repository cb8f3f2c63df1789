import Foundation
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
        if let entry = try store.admin.trashEntries().first(where: { $0.path == path }) { return entry.noteID }
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

    /// Names the machines that made `versions`: this one as `this machine`,
    /// another by the name it last told the server, with the last digits of
    /// its id when another machine (this one included) goes by the same
    /// name, or as `device` and those digits when it told none. Names are
    /// other people's text: shown escaped, never trusted for anything else.
    func deviceWords(for versions: [VersionSummary]) throws -> (DeviceID?) -> String {
        let this = try store.admin.device()
        var devicesByName: [String: Set<DeviceID>] = [this.name: [this.id]]
        var names: [DeviceID: String] = [:]
        for version in versions {
            guard let device = version.device, device != this.id, let name = version.deviceName else { continue }
            names[device] = name
            devicesByName[name, default: []].insert(device)
        }
        return { device in
            guard let device else { return "unknown device" }
            if device == this.id { return "this machine" }
            // The last digits: a time-ordered id begins with its creation time.
            let digits = String(device.description.suffix(8))
            guard let name = names[device] else { return "device " + digits }
            let shown = Self.printable(name)
            return devicesByName[name, default: []].count > 1 ? "\(shown) (\(digits))" : shown
        }
    }

    /// `text` with what a terminal would act on written out: control
    /// characters, line and paragraph separators and bidirectional
    /// overrides become `\u{…}`, a backslash `\\`.
    static func printable(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: shown += "\\\\"
            case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                shown += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
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
