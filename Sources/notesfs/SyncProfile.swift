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
    /// Set by `--insecure-http`: the user accepts sending the token and the
    /// notes unencrypted to a server that is not on this machine.
    var insecureHTTP: Bool?

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
        if scheme == "http", insecureHTTP != true, let host = url.host, !Self.isLoopback(host) {
            throw .usage(
                "refusing plain http to \(host): the token and every note would cross the network unencrypted, "
                    + "readable and replayable by anyone on the way. Use https://\(host) (with --ca-file for a "
                    + "private certificate), or, on a network you trust (a VPN, an SSH tunnel), add --insecure-http")
        }
        return url
    }

    /// True for names and addresses that never leave this machine.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare.lowercased().hasSuffix(".localhost") || bare == "::1" { return true }
        var address = in_addr()
        return inet_pton(AF_INET, bare, &address) == 1 && UInt32(bigEndian: address.s_addr) >> 24 == 127
    }

    /// A warning when the token file can be read by other users, else nil.
    func tokenFileWarning() -> String? {
        var status = stat()
        guard stat(tokenFile, &status) == 0, status.st_mode & 0o077 != 0 else { return nil }
        let mode = String(status.st_mode & 0o777, radix: 8)
        return "warning: the token file \(tokenFile) can be read by other users (mode \(mode)); "
            + "anyone who reads it can read and change your notes. Run: chmod 600 '\(tokenFile)'"
    }

    /// The CA file, checked to be readable (nil: the system's certificates):
    /// `--ca-file`, else the standard `SSL_CERT_FILE` or `CURL_CA_BUNDLE`
    /// (libcurl reads neither by itself).
    func checkedCAFile(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CommandError)
        -> String?
    {
        guard let caFile else {
            for name in ["SSL_CERT_FILE", "CURL_CA_BUNDLE"] {
                guard let file = environment[name], !file.isEmpty else { continue }
                guard FileManager.default.isReadableFile(atPath: file) else {
                    throw .failed("cannot read the CA file \(file) named by \(name); fix or unset \(name)")
                }
                return file
            }
            return nil
        }
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
}
