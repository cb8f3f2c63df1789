import Foundation
import FuseKit
import NotesFS
import NotesStore
import ProcessKit
import SyncEngine

struct MountCommand: Command {
    static let name = "mount"
    static let summary = "Show your notes as plain files in a directory"
    static let help = """
        Usage: notesfs mount <dir> [--data DIR | --profile NAME] [--foreground]
                             [--server URL --token-file F] [--device-name NAME]
                             [--ca-file F] [--insecure-http]

        Mounts the notes database of a profile on <dir>, an existing empty
        directory: folders are directories, notes are text files. Runs in the
        background and logs to mount.log in the data directory; stop it with
        'notesfs unmount <dir>' (or fusermount3 -u <dir>, or SIGTERM).
          --foreground   stay in the foreground and log to stderr as well
          --data DIR     the data directory (default $XDG_DATA_HOME/notesfs/<profile>)
          --profile NAME a named profile (default 'default')
          --server URL   sync with this server (http://host:8080); remembered in the
                         profile's sync.json, so later mounts need no flags
          --token-file F the file holding the token 'notesfs account add' printed
                         (read at every mount, never copied or logged); any token
                         of the account the profile syncs with works, another
                         account's is refused (then see 'notesfs sync --rebind')
          --device-name NAME  the name conflict copies and other machines'
                         'notesfs log' show (default: the host name)
          --ca-file F    trust the certificates in this PEM file for an https server
                         (a private CA or a self-signed server); remembered like
                         --server, and --ca-file '' forgets it
          --insecure-http allow a plain http:// server that is not on this machine
                         (the token and notes travel unencrypted: only on a network
                         you trust); remembered with --server

        With a server, the mount syncs by itself: at start, shortly after each
        change (at once when an edited file is closed), and within moments of a
        change on another machine. 'notesfs sync' asks it to sync now;
        'notesfs status' and .notesfs/status show how it is going.
        """
    /// `--ready-fd` is internal: the background process reports on it.
    static let spec = ArgumentSpec(
        options: DataLocation.options.union(["--ready-fd", "--server", "--token-file", "--device-name", "--ca-file"]),
        flags: ["--foreground", "--insecure-http"], positional: 1...1, hidden: ["--ready-fd"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let location = try DataLocation(arguments)
        guard let directory = arguments.positional.first else { throw CommandError.usage("missing <dir>") }
        let mountpoint = URL(fileURLWithPath: directory).standardizedFileURL.path
        let readyDescriptor = try arguments.option("--ready-fd").map { text throws(CommandError) -> Int32 in
            guard let value = Int32(text), value > 2 else { throw CommandError.usage("--ready-fd needs a descriptor") }
            return value
        }
        let report = MountReport(descriptor: readyDescriptor)
        do {
            try clearDeadMount(mountpoint, location: location, console: console)
            try checkMountpoint(mountpoint)
            try checkFuse()
            try DataLocation.makePrivateDirectory(location.directory.path)
            if let profile = try proposedProfile(arguments, location: location) {
                try refuseAnotherAccount(profile, location: location)
                try profile.save(location)
            }
            if let warning = try SyncProfile.load(location)?.tokenFileWarning() { console.error(warning) }
            if arguments.has("--foreground") {
                return try MountDaemon(location: location, mountpoint: mountpoint, report: report).run()
            }
            try MountLock.checkFree(location.directory.path)
            return try Daemonizer.start(location: location, mountpoint: mountpoint, console: console)
        } catch let error as CommandError {
            report.failed(error.description)
            throw error
        } catch {
            report.failed(UserFacingError.describe(error))
            throw error
        }
    }

    /// A `--server` or `--token-file` whose token the server says belongs to
    /// another account than the database's is refused before anything is
    /// saved, with the way out. Only a new token is asked about (the token
    /// that confirmed the binding belongs to its account for good), and only
    /// for a few seconds: when the server cannot be reached, the mount goes
    /// on and the engine decides at its first contact (status says why sync
    /// is off then).
    static func refuseAnotherAccount(_ profile: SyncProfile, location: DataLocation) throws {
        guard location.exists else { return }
        let token = try profile.token()
        let binding = try location.openStore(create: false).admin.accountBinding()
        guard !binding.isEmpty, binding.tokenID != token.id else { return }
        let url = try profile.serverURL()
        let transport = HTTPSyncTransport(baseURL: url, token: token.text, caFile: try profile.checkedCAFile())
        let key: String?
        do {
            key = try ServerData.blockingAwait { try await transport.namedAccount(timeoutSeconds: accountProbeSeconds) }
        } catch {
            return  // No answer (offline, a token the server refuses, …): the engine decides, status says why.
        }
        let check = binding.check(
            serverAccount: key.map { "account:" + $0 }, tokenID: token.id, server: url.absoluteString)
        if case .failure(let error) = check { throw CommandError.failed(error.description) }
    }

    /// How long `mount` asks the server about a new token before leaving it to the engine.
    static let accountProbeSeconds: Double = 5

    /// The profile `--server`/`--token-file`/`--device-name`/`--ca-file`
    /// make of the saved one, checked (the token file must be readable and
    /// hold a token, the CA file must be readable); nil without those flags.
    static func proposedProfile(_ arguments: ParsedArguments, location: DataLocation) throws(CommandError)
        -> SyncProfile?
    {
        let server = arguments.option("--server")
        let tokenFile = arguments.option("--token-file")
        let deviceName = arguments.option("--device-name")
        let caFile = arguments.option("--ca-file")
        let insecureHTTP = arguments.has("--insecure-http")
        if server == nil && tokenFile == nil && deviceName == nil && caFile == nil && !insecureHTTP { return nil }
        var profile = try SyncProfile.load(location)
        if let server, let tokenFile {
            let absolute = URL(fileURLWithPath: tokenFile).standardizedFileURL.path
            profile = SyncProfile(
                server: server, tokenFile: absolute, deviceName: deviceName ?? profile?.deviceName,
                caFile: profile?.caFile, insecureHTTP: insecureHTTP ? true : nil)
        } else if server != nil || tokenFile != nil {
            guard var existing = profile else {
                throw .usage("--server and --token-file go together (no server is configured for this profile yet)")
            }
            if let server {
                existing.server = server
                existing.insecureHTTP = insecureHTTP ? true : nil
            }
            if let tokenFile { existing.tokenFile = URL(fileURLWithPath: tokenFile).standardizedFileURL.path }
            profile = existing
        }
        guard var profile else {
            let flag = deviceName != nil ? "--device-name" : caFile != nil ? "--ca-file" : "--insecure-http"
            throw .usage("\(flag) needs a server: add --server URL --token-file F")
        }
        if insecureHTTP { profile.insecureHTTP = true }
        if let caFile {
            profile.caFile = caFile.isEmpty ? nil : URL(fileURLWithPath: caFile).standardizedFileURL.path
        }
        if let deviceName {
            guard !deviceName.isEmpty, !deviceName.contains("/") else { throw .usage("--device-name cannot be empty or contain '/'") }
            profile.deviceName = deviceName
        }
        _ = try profile.serverURL()
        _ = try profile.token()
        _ = try profile.checkedCAFile()
        return profile
    }

    /// A mount whose process died (killed, crashed) stays in the kernel's
    /// table and fails every call with ENOTCONN, so a restart — by hand or by
    /// the systemd unit — detaches it first. Only a mount of this same data
    /// directory that no process serves (its lock is free) is touched.
    static func clearDeadMount(_ path: String, location: DataLocation, console: Console) throws(CommandError) {
        guard let mount = MountTable.mount(at: path), mount.fileSystemType.hasSuffix("notesfs"),
            mount.source == "notesfs:" + location.directory.path,
            !UnmountCommand.isLocked(location.directory.path)
        else { return }
        guard UnmountCommand.runProgram(["fusermount3", "-u", "-z", path]) == 0 else {
            throw .failed(
                "\(path) still holds a mount of this profile whose process died; detach it with: fusermount3 -u -z '\(path)'")
        }
        console.error("Detached the mount on \(path) left by a notesfs process that died.")
    }

    static func checkMountpoint(_ path: String) throws(CommandError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .failed("\(path) does not exist. Create it first: mkdir -p '\(path)'")
        }
        guard isDirectory.boolValue else { throw .failed("\(path) is not a directory") }
        if let mount = MountTable.mount(at: path) {
            throw .failed("\(path) is already a mount point (\(mount.fileSystemType)). Unmount it first.")
        }
        let contents: [String]
        do {
            contents = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw .failed("cannot read \(path): \(error.localizedDescription)")
        }
        guard contents.isEmpty else {
            throw .failed(
                "\(path) is not empty (\(contents.count) entries). Mount on an empty directory so nothing is hidden.")
        }
    }

    static func checkFuse() throws(CommandError) {
        guard access("/dev/fuse", R_OK | W_OK) == 0 else {
            throw .failed("/dev/fuse is missing or not accessible; load the fuse module (modprobe fuse) or "
                + "run with access to /dev/fuse")
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let found = path.split(separator: ":").contains { access("\($0)/fusermount3", X_OK) == 0 }
        guard found else { throw .failed("fusermount3 is not installed (apt-get install fuse3)") }
    }
}

/// Tells the waiting parent how the background mount went (one line on a pipe).
struct MountReport: Sendable {
    let descriptor: Int32?

    func ready() { send("ready") }
    func failed(_ message: String) { send("error: " + message.replacingOccurrences(of: "\n", with: " ")) }

    private func send(_ line: String) {
        guard let descriptor else { return }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }
}

/// The lock file that keeps two processes from serving one database.
enum MountLock {
    static func path(_ directory: String) -> String { directory + "/mount.lock" }

    /// Takes the lock for this process's lifetime (the descriptor stays open)
    /// and writes our pid into it.
    static func acquire(_ directory: String) throws(CommandError) -> Int32 {
        let descriptor = open(path(directory), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .failed("cannot open \(path(directory)): \(String(cString: strerror(errno)))") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = holderPID(directory)
            close(descriptor)
            throw .failed(
                "another notesfs process\(holder.map { " (pid \($0))" } ?? "") already serves \(directory). "
                    + "Unmount it first (notesfs unmount <dir>).")
        }
        _ = ftruncate(descriptor, 0)
        let text = Array("\(getpid())\n".utf8)
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return descriptor
    }

    /// Refuses early (before starting the background process) when the lock is held.
    static func checkFree(_ directory: String) throws(CommandError) {
        let descriptor = try acquire(directory)
        close(descriptor)
    }

    static func holderPID(_ directory: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: path(directory), encoding: .utf8) else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Starts `notesfs mount --foreground` as a background process in its own
/// session and waits until it reports that the mount is up (or why not).
enum Daemonizer {
    static func start(location: DataLocation, mountpoint: String, console: Console) throws -> Int32 {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw CommandError.failed("cannot create a pipe") }
        // Keep both ends above 3 so the dup2 to 3 below always clears close-on-exec.
        let readEnd = fcntl(pipeEnds[0], F_DUPFD_CLOEXEC, 10)
        let writeEnd = fcntl(pipeEnds[1], F_DUPFD_CLOEXEC, 10)
        close(pipeEnds[0])
        close(pipeEnds[1])
        defer { close(readEnd) }
        let logPath = location.directory.appendingPathComponent("mount.log").path
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        let arguments = [
            executable, "mount", mountpoint, "--data", location.directory.path, "--foreground", "--ready-fd", "3",
        ]

        var options = ChildProcess.Options(
            standardInput: .null, standardOutput: .null, standardError: .file(logPath, append: true))
        options.passedDescriptors = [3: writeEnd]
        options.searchPath = false
        options.newSession = true
        options.defaultSignals = [SIGTERM, SIGINT, SIGHUP, SIGPIPE]
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn(arguments, options)
            close(writeEnd)
        } catch {
            close(writeEnd)
            throw CommandError.failed("cannot start the mount process: \(error)")
        }

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while received.count < 8_192 {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        let line = String(decoding: received, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line == "ready" {
            console.out("Mounted your notes on \(mountpoint) (data: \(location.directory.path); log: \(logPath)).")
            return 0
        }
        if line.hasPrefix("error: ") {
            throw CommandError.failed(String(line.dropFirst("error: ".count)))
        }
        var status: Int32 = 0
        _ = waitpid(pid, &status, WNOHANG)
        throw CommandError.failed("the mount process exited before the mount was ready; see \(logPath)")
    }
}

/// The mount process itself: takes the lock, opens the store, mounts, serves
/// until unmounted or signalled, and cleans up.
struct MountDaemon {
    let location: DataLocation
    let mountpoint: String
    let report: MountReport

    func run() throws -> Int32 {
        // Signals are taken by one thread with sigwait; every thread started
        // from here on inherits the blocked mask, so no libfuse or store
        // thread is interrupted by them.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        let systemd = SystemdNotifier.fromEnvironment()

        let lock = try MountLock.acquire(location.directory.path)
        defer { close(lock) }
        let log = try MountLog(
            path: location.directory.appendingPathComponent("mount.log").path, alsoStandardError: report.descriptor == nil)
        log.info("notesfs \(CommandLineTool.version) mounting \(location.directory.path) on \(mountpoint) (pid \(getpid()))")
        let store = try location.openStore(create: true, prunesHistory: true)
        try store.admin.beginSession()
        do {
            let added = try store.admin.prepareWriteAheadLog()
            if added > 0 { log.info("gave the write-ahead log its full size (\(added) bytes of zeros)") }
        } catch {
            log.warning("could not give the write-ahead log its full size: \(error); saves sync a growing file")
        }
        let syncSetup = try SyncService.prepare(location: location, store: store, log: log)
        let mount = try NotesMount(
            tree: store.tree, mountpoint: mountpoint, log: log, sourceName: "notesfs:" + location.directory.path)
        let sync = try syncSetup.map { setup in
            try SyncService(
                location: location, store: store, transport: setup.transport, tokenID: setup.tokenID, mount: mount,
                log: log)
        }
        try mount.mount()

        let waitedSignals = signals
        let signalThread = Thread {
            var waited = waitedSignals
            var received: Int32 = 0
            while sigwait(&waited, &received) == 0 {
                log.info("signal \(received): unmounting")
                mount.requestStop()
            }
        }
        signalThread.name = "notesfs-signals"
        signalThread.start()

        report.ready()
        systemd.send("READY=1")
        sync?.start()
        let result = mount.serve()
        systemd.send("STOPPING=1")
        sync?.stop()
        do {
            if try store.admin.checkpointForShutdown() {
                log.info("moved the write-ahead log into \(location.databasePath)")
            } else {
                log.warning("another process was reading the database; part of the write-ahead log stays (replayed at the next open)")
            }
        } catch {
            log.warning("could not move the write-ahead log into the database file: \(error); it is replayed at the next open")
        }
        log.info("stopped (\(result))")
        return 0
    }
}
