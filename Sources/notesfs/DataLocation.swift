import Foundation
import NotesStore

/// Where a profile's data lives: `--data DIR`, else
/// `$XDG_DATA_HOME/notesfs/<profile>/` (default profile `default`).
struct DataLocation {
    let directory: URL

    var databasePath: String { directory.appendingPathComponent("notes.sqlite").path }

    /// The options every command that opens a profile accepts.
    static let options: Set<String> = ["--data", "--profile"]

    init(_ arguments: ParsedArguments) throws(CommandError) {
        if arguments.option("--data") != nil && arguments.option("--profile") != nil {
            throw .usage("give either --data or --profile, not both")
        }
        if let data = arguments.option("--data") {
            directory = URL(fileURLWithPath: data, isDirectory: true).standardizedFileURL
            return
        }
        let profile = arguments.option("--profile") ?? "default"
        guard !profile.isEmpty, !profile.contains("/"), profile != ".", profile != ".." else {
            throw .usage("a profile name cannot be empty or contain '/'")
        }
        directory = Self.dataHome.appendingPathComponent("notesfs/\(profile)", isDirectory: true)
    }

    static var dataHome: URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true)
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share", isDirectory: true)
    }

    /// Makes `path` (and missing parents) a directory only its owner can
    /// enter, or takes the group and other bits off an existing one: a data
    /// directory holds every note, a token path and the sync socket.
    static func makePrivateDirectory(_ path: String) throws(CommandError) {
        var status = stat()
        if stat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else { throw .failed("\(path) is not a directory") }
            if status.st_mode & 0o077 != 0, status.st_uid == geteuid() { chmod(path, status.st_mode & 0o700) }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .failed("cannot create \(path): \(error.localizedDescription)")
        }
    }

    /// True when the profile has a database already.
    var exists: Bool { FileManager.default.fileExists(atPath: databasePath) }

    /// Opens the profile's store, creating the directory when `create` is set.
    /// Only the mount prunes the history (in the background, for as long as
    /// it runs); a short command leaves it to the mount.
    func openStore(create: Bool, prunesHistory: Bool = false) throws -> NotesStore {
        if !exists {
            guard create else {
                throw CommandError.failed(
                    "no notes database at \(directory.path). Mount or import first, or pass --data/--profile.")
            }
        }
        try Self.makePrivateDirectory(directory.path)
        var configuration = StoreConfiguration()
        configuration.historyPruning = prunesHistory ? .background : .manual
        return try NotesStore(path: databasePath, configuration: configuration)
    }
}
