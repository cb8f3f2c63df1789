import Foundation
import FuseKit
import HTTPServer
import NotesFS

/// `notesfs service`: systemd units that mount a profile at login or run the
/// sync server, written and removed by notesfs itself.
struct ServiceCommand: Command {
    static let name = "service"
    static let summary = "Mount at login or run the server as a systemd service"
    static let help = """
        Usage: notesfs service install [--profile NAME] [--mountpoint DIR] [--no-start | --print]
               notesfs service install-server [--system [--run-as USER]] [--no-start | --print]
                                              [serve options: --listen ADDR --data DIR ...]
               notesfs service uninstall [--profile NAME | --server [--system] | --all]
               notesfs service list

        install         Writes the systemd user unit notesfs-mount-<profile>.service,
                        which mounts the profile when you log in and mounts it again
                        if the mount process dies, then enables and starts it. A
                        folder mounted by hand now stays as it is; the service takes
                        over at the next login.
        install-server  Writes notesfs-serve.service, which runs 'notesfs serve'
                        with the serve options given (see 'notesfs serve --help'),
                        restarts it if it dies, and starts it. A user unit runs while
                        you are logged in (for always: loginctl enable-linger $USER);
                        with --system (as root) a system unit runs at boot as --run-as
                        (default notesfs), with data in /var/lib/notesfs by default.
        uninstall       Stops, disables and removes the profile's mount unit (default
                        profile 'default'), the server's unit (--server), or every
                        unit notesfs wrote (--all). Data is never touched.
        list            Shows the units notesfs wrote and whether each is running.

        Options:
          --profile NAME      the profile to mount (default 'default')
          --mountpoint DIR    where to mount it (default ~/Notes for the default
                              profile; needed for any other)
          --system            a system unit in /etc/systemd/system (as root)
          --run-as USER       with --system: the user the server runs as (default notesfs)
          --executable PATH   the notesfs binary the unit runs (default: this one)
          --no-start          write the unit, but neither enable nor start it
          --print             print the unit instead of writing it
          --server            uninstall: the server's unit
          --all               uninstall: every unit notesfs wrote

        Units go to ~/.config/systemd/user/ (or $XDG_CONFIG_HOME/systemd/user/).
        Follow them with: systemctl --user status notesfs-mount-default, and
        journalctl --user -u notesfs-mount-default.
        """
    static let spec = ArgumentSpec(
        options: ServeCommand.spec.options.union(["--profile", "--mountpoint", "--run-as", "--executable"]),
        flags: ["--system", "--no-start", "--print", "--server", "--all"], positional: 1...1,
        actions: ["install", "install-server", "uninstall", "list"])

    /// The serve options a server unit passes on (everything in serve's spec).
    static let serveOptions = ServeCommand.spec.options

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        switch arguments.positional[0] {
        case "install":
            try refuse(arguments, ["--system", "--run-as", "--server", "--all"] + serveOptions.sorted(), for: "install")
            return try installMount(arguments, console: console)
        case "install-server":
            try refuse(arguments, ["--profile", "--mountpoint", "--server", "--all"], for: "install-server")
            return try installServer(arguments, console: console)
        case "uninstall":
            try refuse(
                arguments, ["--mountpoint", "--run-as", "--executable", "--no-start", "--print"] + serveOptions.sorted(),
                for: "uninstall")
            return try uninstall(arguments, console: console)
        case "list":
            try refuse(arguments, spec.options.union(spec.flags).sorted(), for: "list")
            list(console: console)
            return 0
        default:
            throw CommandError.usage(
                "unknown action '\(arguments.positional[0])'; use install, install-server, uninstall or list")
        }
    }

    static func refuse(_ arguments: ParsedArguments, _ names: [String], for action: String) throws(CommandError) {
        for name in names where arguments.option(name) != nil || arguments.has(name) {
            throw .usage("\(name) does not go with 'service \(action)'")
        }
    }

    // MARK: mount units

    static func installMount(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let profile = arguments.option("--profile") ?? "default"
        try checkUnitWord(profile)
        let location = try DataLocation(arguments)
        let mountpoint: String
        if let given = arguments.option("--mountpoint") {
            mountpoint = URL(fileURLWithPath: given).standardizedFileURL.path
        } else if profile == "default" {
            mountpoint = home.map { $0 + "/Notes" } ?? NSHomeDirectory() + "/Notes"
        } else {
            throw CommandError.usage("give --mountpoint DIR for profile '\(profile)' (~/Notes is the default profile's)")
        }
        let executable = try executablePath(arguments, console: console)
        let unitName = SystemdUnits.mountUnitName(profile: profile)
        let text = SystemdUnits.mount(
            executable: executable, profile: profile, dataDirectory: location.directory.path, mountpoint: mountpoint,
            home: home)
        if arguments.has("--print") {
            console.out(text, terminator: "")
            return 0
        }
        if !FileManager.default.fileExists(atPath: mountpoint) {
            do {
                try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
            } catch {
                throw CommandError.failed("cannot create \(mountpoint): \(error.localizedDescription)")
            }
        }
        let path = try write(text, unit: unitName, system: false)
        console.out("Wrote \(path): it mounts profile '\(profile)' on \(mountpoint) at login.")
        if arguments.has("--no-start") {
            console.out("Start it with: systemctl --user daemon-reload && systemctl --user enable --now \(unitName)")
            return 0
        }
        try systemctl(["daemon-reload"], system: false, unit: unitName)
        // A mount whose process died does not count: the service detaches it.
        if let mount = MountTable.mount(at: mountpoint), !isDead(mount) {
            try systemctl(["enable", unitName], system: false, unit: unitName)
            console.out(
                "\(mountpoint) is already mounted (\(mount.fileSystemType)), so the service starts at your next login."
                    + " To switch now: notesfs unmount \(mountpoint) && systemctl --user start \(unitName)")
        } else {
            try systemctl(["enable", "--now", unitName], system: false, unit: unitName)
            console.out("Started \(unitName): your notes are on \(mountpoint).")
        }
        console.out(
            "Status: systemctl --user status \(unitName); log: journalctl --user -u \(unitName); "
                + "remove: notesfs service uninstall --profile \(profile)")
        return 0
    }

    /// A notesfs mount that no process serves any more (its data
    /// directory's lock is free).
    static func isDead(_ mount: MountTable.Mount) -> Bool {
        guard mount.fileSystemType.hasSuffix("notesfs"), mount.source.hasPrefix("notesfs:") else { return false }
        return !UnmountCommand.isLocked(String(mount.source.dropFirst("notesfs:".count)))
    }

    // MARK: server units

    static func installServer(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let system = arguments.has("--system")
        if !system, arguments.option("--run-as") != nil { throw CommandError.usage("--run-as goes with --system") }
        let executable = try executablePath(arguments, console: console)
        let serve = try serveArguments(arguments, system: system)
        // Check the options as serve will read them, so a typo fails now and not at boot.
        let parsed = try ParsedArguments(serve, spec: ServeCommand.spec)
        if let listen = parsed.option("--listen"), ListenAddress(listen) == nil {
            throw CommandError.usage("--listen needs an IP address and port like 127.0.0.1:8080, not '\(listen)'")
        }
        if (parsed.option("--tls-cert") == nil) != (parsed.option("--tls-key") == nil) {
            throw CommandError.usage("--tls-cert and --tls-key go together")
        }
        var systemServer: SystemdUnits.SystemServer?
        if system {
            let user = arguments.option("--run-as") ?? "notesfs"
            var stateDirectory: String?
            var writable: [String] = []
            if let data = parsed.option("--data") {
                if data.hasPrefix("/var/lib/"), data.count > "/var/lib/".count {
                    stateDirectory = String(data.dropFirst("/var/lib/".count))
                } else {
                    writable.append(data)
                }
            }
            if let mark = parsed.option("--counter-mark") {
                let directory = (mark as NSString).deletingLastPathComponent
                if !(stateDirectory.map { directory.hasPrefix("/var/lib/\($0)") } ?? false) { writable.append(directory) }
            }
            let port = parsed.option("--listen").flatMap { ListenAddress($0)?.port } ?? 8080
            systemServer = SystemdUnits.SystemServer(
                user: user, group: user, stateDirectory: stateDirectory, writablePaths: writable, privilegedPort: port < 1024)
            if !arguments.has("--print") {
                try checkSystemInstall(user: user, executable: executable, writable: writable)
            }
        }
        let text = SystemdUnits.server(
            executable: executable, serveArguments: serve, home: system ? nil : home, system: systemServer)
        if arguments.has("--print") {
            console.out(text, terminator: "")
            return 0
        }
        let unitName = SystemdUnits.serverUnitName
        let path = try write(text, unit: unitName, system: system)
        let scope = system ? "" : "--user "
        console.out("Wrote \(path): it runs notesfs serve \(serve.joined(separator: " ")).")
        if arguments.has("--no-start") {
            console.out("Start it with: systemctl \(scope)daemon-reload && systemctl \(scope)enable --now \(unitName)")
            return 0
        }
        try systemctl(["daemon-reload"], system: system, unit: unitName)
        try systemctl(["enable", "--now", unitName], system: system, unit: unitName)
        console.out(
            "Started \(unitName). Status: systemctl \(scope)status \(unitName); log: journalctl \(scope)-u \(unitName); "
                + "remove: notesfs service uninstall --server\(system ? " --system" : "")")
        if system {
            let data = parsed.option("--data") ?? "/var/lib/notesfs"
            console.out("Add an account with: runuser -u \(systemServer?.user ?? "notesfs") -- \(executable) account add NAME --data \(data)")
        } else if ProcessInfo.processInfo.environment["USER"].map({ !isLingering($0) }) ?? false {
            console.out("It runs while you are logged in; to keep it running always: loginctl enable-linger $USER")
        }
        return 0
    }

    /// The serve options given, with paths made absolute and the defaults
    /// written out (so the unit says where its data is).
    static func serveArguments(_ arguments: ParsedArguments, system: Bool) throws(CommandError) -> [String] {
        var values: [String: String] = [:]
        let paths: Set<String> = ["--data", "--counter-mark", "--tls-cert", "--tls-key"]
        for option in serveOptions {
            guard let value = arguments.option(option) else { continue }
            values[option] = paths.contains(option) ? URL(fileURLWithPath: value).standardizedFileURL.path : value
        }
        if values["--listen"] == nil { values["--listen"] = "127.0.0.1:8080" }
        if values["--data"] == nil && values["--postgres"] == nil {
            values["--data"] = system ? "/var/lib/notesfs" : ServerData.directory(arguments)
        }
        // Where it listens and where its data is first, then the rest by name.
        let first = ["--listen", "--data", "--postgres"]
        return (first + values.keys.filter { !first.contains($0) }.sorted()).flatMap { option in
            values[option].map { [option, $0] } ?? []
        }
    }

    /// A system unit runs as another user: that user must exist, reach the
    /// binary, and the directories it writes outside /var/lib must exist.
    static func checkSystemInstall(user: String, executable: String, writable: [String]) throws(CommandError) {
        guard geteuid() == 0 else { throw .failed("--system writes to /etc/systemd/system: run it as root") }
        guard getpwnam(user) != nil else {
            throw .failed(
                "there is no user '\(user)'. Make one first: useradd --system --user-group "
                    + "--home-dir /var/lib/notesfs --shell /usr/sbin/nologin \(user)")
        }
        var path = ""
        for component in executable.split(separator: "/").dropLast() {
            path += "/" + component
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & 0o001 != 0 else {
                throw .failed(
                    "user '\(user)' cannot reach \(executable) (\(path) is private). Install notesfs system-wide "
                        + "first: notesfs install --prefix /usr/local, then run /usr/local/bin/notesfs service install-server --system")
            }
        }
        for directory in writable where !FileManager.default.fileExists(atPath: directory) {
            throw .failed("\(directory) does not exist. Make it first: install -d -o \(user) -g \(user) -m 0700 \(directory)")
        }
    }

    static func isLingering(_ user: String) -> Bool {
        FileManager.default.fileExists(atPath: "/var/lib/systemd/linger/\(user)")
    }

    // MARK: uninstall and list

    static func uninstall(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let system = arguments.has("--system")
        if arguments.has("--all") {
            let removed = removeAll(includingSystem: true, console: console)
            console.out(removed == 0 ? "No notesfs units were installed." : "Removed \(removed) notesfs unit(s).")
            return 0
        }
        let unit: String
        if arguments.has("--server") {
            unit = SystemdUnits.serverUnitName
        } else {
            if system { throw CommandError.usage("--system goes with --server (mount units are user units)") }
            let profile = arguments.option("--profile") ?? "default"
            try checkUnitWord(profile)
            unit = SystemdUnits.mountUnitName(profile: profile)
        }
        let path = unitDirectory(system: system) + "/" + unit
        guard isOurs(path) else {
            throw CommandError.failed("there is no \(unit) written by notesfs in \(unitDirectory(system: system))")
        }
        let stopped = try remove(unit: unit, system: system, console: console)
        console.out("Removed \(path)\(stopped ? " (stopped and disabled)" : ""). Your notes are untouched.")
        return 0
    }

    /// Stops, disables and removes every unit notesfs wrote (user units, and
    /// system ones too when asked and root); returns how many.
    static func removeAll(includingSystem: Bool, console: Console) -> Int {
        var removed = 0
        for system in includingSystem && geteuid() == 0 ? [false, true] : [false] {
            for unit in installedUnits(system: system) {
                do {
                    _ = try remove(unit: unit, system: system, console: console)
                    console.out("Removed \(unitDirectory(system: system))/\(unit).")
                    removed += 1
                } catch {
                    console.error("notesfs: \(UserFacingError.describe(error))")
                }
            }
        }
        return removed
    }

    static func list(console: Console) {
        var any = false
        for system in [false, true] {
            for unit in installedUnits(system: system) {
                any = true
                let scope = system ? "system" : "user"
                let state =
                    systemctlReachable(system: system)
                    ? systemctlOutput(["is-active", unit], system: system) ?? "unknown"
                    : "unknown (systemctl cannot reach the \(scope) manager here)"
                console.out("\(unit) (\(scope)): \(state)  \(unitDirectory(system: system))/\(unit)")
            }
        }
        if !any { console.out("No notesfs units are installed. See: notesfs service --help") }
    }

    static func installedUnits(system: Bool) -> [String] {
        let directory = unitDirectory(system: system)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix("notesfs-") && $0.hasSuffix(".service") && isOurs(directory + "/" + $0) }.sorted()
    }

    /// Stops, disables and removes one unit; returns whether systemctl
    /// could be reached to stop it (a manager that cannot be reached runs
    /// nothing of it, and the links `enable` made are removed by hand).
    @discardableResult
    static func remove(unit: String, system: Bool, console: Console) throws -> Bool {
        let directory = unitDirectory(system: system)
        let reachable = systemctlReachable(system: system)
        if reachable { try systemctl(["disable", "--now", unit], system: system, unit: unit) }
        let wants = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".wants") }
        for link in wants.map({ "\(directory)/\($0)/\(unit)" }) where (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != nil {
            unlink(link)
        }
        guard unlink(directory + "/" + unit) == 0 || errno == ENOENT else {
            throw CommandError.failed("cannot remove \(directory)/\(unit): \(String(cString: strerror(errno)))")
        }
        if reachable { try systemctl(["daemon-reload"], system: system, unit: unit) }
        return reachable
    }

    static func isOurs(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 256)) ?? Data()
        return String(decoding: head, as: UTF8.self).hasPrefix(SystemdUnits.marker)
    }

    // MARK: files and systemctl

    static var home: String? {
        guard let home = ProcessInfo.processInfo.environment["HOME"], home.hasPrefix("/") else { return nil }
        return URL(fileURLWithPath: home).standardizedFileURL.path
    }

    static func unitDirectory(system: Bool) -> String {
        if system { return "/etc/systemd/system" }
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/systemd/user" }
        return (home ?? NSHomeDirectory()) + "/.config/systemd/user"
    }

    /// Unit names allow few characters, and a profile names one.
    static func checkUnitWord(_ profile: String) throws(CommandError) {
        let allowed = profile.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
        guard allowed, !profile.isEmpty, !profile.hasPrefix(".") else {
            throw .usage("a profile run as a service needs a name of letters, digits, '-', '_' and '.'")
        }
    }

    /// `--executable`, else the running binary. A binary in a build directory
    /// works, but the next build or clean changes it: say so.
    static func executablePath(_ arguments: ParsedArguments, console: Console) throws(CommandError) -> String {
        let path: String
        if let given = arguments.option("--executable") {
            path = URL(fileURLWithPath: given).standardizedFileURL.path
        } else {
            path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        }
        guard path.hasPrefix("/") else { throw .failed("cannot tell where the notesfs binary is; give --executable PATH") }
        if !arguments.has("--print") {
            guard access(path, X_OK) == 0 else { throw .failed("\(path) is not an executable file") }
            if path.contains("/.build/") {
                console.error(
                    "notesfs: note: the unit runs \(path), a build output that the next build or clean replaces; "
                        + "'notesfs install' puts notesfs on your PATH first")
            }
        }
        return path
    }

    static func write(_ text: String, unit: String, system: Bool) throws(CommandError) -> String {
        let directory = unitDirectory(system: system)
        let path = directory + "/" + unit
        if FileManager.default.fileExists(atPath: path), !isOurs(path) {
            throw .failed("\(path) exists and was not written by notesfs; move it away first")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .failed("cannot create \(directory): \(error.localizedDescription)")
        }
        try InstallFiles.write(Data(text.utf8), to: path, mode: 0o644)
        return path
    }

    /// True when systemctl can talk to the manager (not in a container
    /// without systemd, nor over ssh without a user session).
    static func systemctlReachable(system: Bool) -> Bool {
        let states: Set<String> = ["initializing", "starting", "running", "degraded", "maintenance", "stopping"]
        return systemctlOutput(["is-system-running"], system: system).map(states.contains) ?? false
    }

    /// Runs systemctl; a failure says what was written and how to go on by hand.
    static func systemctl(_ arguments: [String], system: Bool, unit: String) throws(CommandError) {
        let command = ["systemctl"] + (system ? [] : ["--user"]) + arguments
        guard UnmountCommand.runProgram(command) == 0 else {
            throw .failed(
                "'\(command.joined(separator: " "))' failed"
                    + (system
                        ? "."
                        : " (is there a user session? Over ssh, run 'loginctl enable-linger $USER' and log in again).")
                    + " The unit file is written; retry, or remove it with: notesfs service uninstall")
        }
    }

    /// The first line systemctl prints on standard output (is-active and
    /// is-system-running print a state whatever their exit code), or nil
    /// when it printed none or could not run.
    static func systemctlOutput(_ arguments: [String], system: Bool) -> String? {
        let command = ["systemctl"] + (system ? [] : ["--user"]) + arguments
        guard let output = ProgramOutput.standardOutput(command) else { return nil }
        let line = output.split(separator: "\n").first.map(String.init) ?? ""
        return line.isEmpty ? nil : line
    }
}
