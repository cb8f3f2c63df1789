import Foundation
import SyncServer

/// Where a profile syncs to, kept in `sync.json` in its data directory so that
/// later mounts need no flags: the server URL, the path of the token file (the
/// token itself is read from that file at each mount and never written or
/// logged anywhere), an optional device name and an optional file of CA
/// certificates to trust instead of the system's (`--ca-file`).
struct SyncProfile: Codable, Equatable {
    var server: String
    var tokenFile: String
    var deviceName: String?
    var caFile: String?

    static func path(_ location: DataLocation) -> String {
        location.directory.appendingPathComponent("sync.json").path
    }

    /// The saved profile, nil when none was saved.
    static func load(_ location: DataLocation) throws(CommandError) -> SyncProfile? {
        let path = path(location)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(SyncProfile.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .failed("cannot read \(path) (\(error.localizedDescription)); fix it or remount with --server and --token-file")
        }
    }

    func save(_ location: DataLocation) throws(CommandError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(self)
            try data.write(to: URL(fileURLWithPath: Self.path(location)), options: .atomic)
        } catch {
            throw .failed("cannot write \(Self.path(location)): \(error.localizedDescription)")
        }
    }

    /// The server URL, checked.
    func serverURL() throws(CommandError) -> URL {
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host != nil
        else { throw .usage("--server needs a URL like http://host:8080, not '\(server)'") }
        return url
    }

    /// The CA file, checked to be readable (nil: the system's certificates).
    func checkedCAFile() throws(CommandError) -> String? {
        guard let caFile else { return nil }
        guard FileManager.default.isReadableFile(atPath: caFile) else {
            throw .failed("cannot read the CA file \(caFile) given with --ca-file; "
                + "fix the path, or remount with --ca-file '' to trust the system's certificates again")
        }
        return caFile
    }

    /// Reads and checks the token (`nfs_<id>_<secret>`). Error messages never contain it.
    func token() throws(CommandError) -> AccessToken {
        let text: String
        do {
            text = try String(contentsOfFile: tokenFile, encoding: .utf8)
        } catch {
            throw .failed("cannot read the token file \(tokenFile) (\(error.localizedDescription)). "
                + "Put the token 'notesfs account add' printed in it.")
        }
        guard let token = AccessToken(text: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw .failed("\(tokenFile) does not hold a notesfs token (nfs_<id>_<secret>). "
                + "Put the token 'notesfs account add' printed in it.")
        }
        return token
    }

    /// What the store is bound to. The server does not name accounts to
    /// clients, so the token's id stands for the account: a database synced
    /// with one token refuses another (use a new profile for another account).
    static func accountKey(_ token: AccessToken) -> String { "token:\(token.id)" }
}
