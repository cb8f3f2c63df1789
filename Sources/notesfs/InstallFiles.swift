import Foundation

/// Where `notesfs install` puts each file under a prefix; install and
/// uninstall both read it, so they agree.
struct InstallLayout {
    let prefix: String

    var binary: String { prefix + "/bin/notesfs" }
    var manPage: String { prefix + "/share/man/man1/notesfs.1" }

    /// Where each shell looks for completion under a prefix.
    func completion(_ shell: ShellCompletion.Shell) -> String {
        switch shell {
        case .bash: prefix + "/share/bash-completion/completions/notesfs"
        case .zsh: prefix + "/share/zsh/site-functions/_notesfs"
        case .fish: prefix + "/share/fish/vendor_completions.d/notesfs.fish"
        }
    }

    /// Every file but the binary, with its contents.
    var generatedFiles: [(path: String, contents: String)] {
        [(manPage, ManPage.roff())] + ShellCompletion.Shell.allCases.map { (completion($0), ShellCompletion.script(for: $0)) }
    }

    /// Every path install writes.
    var allPaths: [String] { [binary] + generatedFiles.map(\.path) }

    /// `~/.local`, or `/usr/local` for root.
    static var defaultPrefix: String {
        if geteuid() == 0 { return "/usr/local" }
        let home = ProcessInfo.processInfo.environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).standardizedFileURL.path + "/.local"
    }

    init(prefix: String) {
        self.prefix = URL(fileURLWithPath: prefix).standardizedFileURL.path
    }
}

/// Writing installed files: whole or not at all (a temporary file renamed
/// over the old one, so a running notesfs keeps its binary), with explicit
/// modes whatever the umask, and not at all when already up to date.
enum InstallFiles {
    /// Writes `data` to `path` unless it already holds exactly that with
    /// `mode`; returns true when it wrote.
    @discardableResult
    static func write(_ data: Data, to path: String, mode: mode_t) throws(CommandError) -> Bool {
        if let existing = FileManager.default.contents(atPath: path), existing == data, modeOf(path) == mode {
            return false
        }
        try makeDirectories((path as NSString).deletingLastPathComponent)
        let temporary = temporaryPath(for: path)
        do {
            try data.write(to: URL(fileURLWithPath: temporary))
        } catch {
            throw .failed("cannot write \(path): \(error.localizedDescription)")
        }
        try finish(temporary, as: path, mode: mode)
        return true
    }

    /// Copies the file at `source` to `path` unless they are the same file
    /// or already equal; returns true when it copied.
    @discardableResult
    static func copy(_ source: String, to path: String, mode: mode_t) throws(CommandError) -> Bool {
        guard let resolvedSource = realpath(source) else { throw .failed("cannot read \(source)") }
        if resolvedSource == realpath(path) || (sameContents(source, path) && modeOf(path) == mode) { return false }
        try makeDirectories((path as NSString).deletingLastPathComponent)
        let temporary = temporaryPath(for: path)
        do {
            try FileManager.default.copyItem(atPath: source, toPath: temporary)
        } catch {
            throw .failed("cannot copy \(source) to \(path): \(error.localizedDescription)")
        }
        try finish(temporary, as: path, mode: mode)
        return true
    }

    /// Removes `path`; returns true when there was a file to remove.
    static func remove(_ path: String) throws(CommandError) -> Bool {
        if unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw .failed("cannot remove \(path): \(String(cString: strerror(errno)))")
    }

    /// Makes `directory` and its missing parents, each 0755 (a prefix is
    /// shared: /usr/local/share/man must stay readable by everyone).
    static func makeDirectories(_ directory: String) throws(CommandError) {
        var path = ""
        for component in directory.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) == 0 {
                chmod(path, 0o755)
            } else if errno != EEXIST {
                throw .failed("cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    private static func temporaryPath(for path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        return "\(directory)/.\(name).notesfs-install-\(getpid())"
    }

    private static func finish(_ temporary: String, as path: String, mode: mode_t) throws(CommandError) {
        guard chmod(temporary, mode) == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .failed("cannot install \(path): \(reason)")
        }
    }

    private static func realpath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func modeOf(_ path: String) -> mode_t? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return status.st_mode & 0o7777
    }

    /// Compares two files piece by piece (a static notesfs is tens of MB).
    private static func sameContents(_ first: String, _ second: String) -> Bool {
        guard let a = FileHandle(forReadingAtPath: first), let b = FileHandle(forReadingAtPath: second) else { return false }
        defer {
            try? a.close()
            try? b.close()
        }
        while true {
            let left: Data
            let right: Data
            do {
                left = try a.read(upToCount: 1 << 20) ?? Data()
                right = try b.read(upToCount: 1 << 20) ?? Data()
            } catch {
                return false
            }
            if left != right { return false }
            if left.isEmpty { return true }
        }
    }
}
