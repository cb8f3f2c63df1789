import Foundation
import Testing
import TestSupport

/// The systemd units: what `notesfs service` writes verifies with
/// `systemd-analyze verify`, the copies in dist/systemd are the same text, and
/// the programs the units start tell systemd when they are ready.
@Suite(.serialized) struct ServiceUnitTests {
    /// A temporary home with notesfs installed in `~/.local`, the way the
    /// units expect it.
    struct Home {
        let scratch: TemporaryDirectory
        var path: String { scratch.file("home") }
        var prefix: String { path + "/.local" }
        var binary: String { prefix + "/bin/notesfs" }
        var unitDirectory: String { path + "/.config/systemd/user" }
        var environment: [String: String] {
            ["HOME": path, "PATH": Programs.systemPath, "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": scratch.file("runtime")]
        }

        init(notesfs: String) throws {
            scratch = try TemporaryDirectory(prefix: "notesfs-units")
            try FileManager.default.createDirectory(atPath: scratch.file("home"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(
                atPath: scratch.file("runtime"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let installed = try Programs.run([notesfs, "install", "--prefix", scratch.file("home") + "/.local"])
            guard installed.status == 0 else { throw MountFixture.Failure("install failed: \(installed.standardError)") }
        }

        func notesfs(_ arguments: [String]) throws -> MountFixture.Result {
            try Programs.run([binary] + arguments, environment: environment)
        }

        /// `systemd-analyze verify` of `files`, in the user manager's mode or
        /// the system's; the page `Documentation=man:notesfs(1)` names is
        /// looked up in the temporary prefix. Any line it prints fails.
        func verify(_ files: [String], user: Bool) throws {
            guard let analyze = Programs.tool("systemd-analyze", package: "systemd") else { return }
            var environment = environment
            environment["MANPATH"] = prefix + "/share/man"
            let result = try Programs.run([analyze] + (user ? ["--user"] : []) + ["verify"] + files, environment: environment)
            #expect(result.status == 0, "systemd-analyze verify \(files): \(result.standardError)")
            #expect(result.standardError.isEmpty && result.standardOutput.isEmpty, "\(result.standardOutput)\(result.standardError)")
        }
    }

    @Test func theUnitsServiceInstallWritesVerifyAndUninstallRemovesOnlyThem() throws {
        guard let notesfs = Programs.notesfs() else { return }
        let home = try Home(notesfs: notesfs)
        defer { home.scratch.remove() }

        let mount = try home.notesfs(["service", "install", "--no-start"])
        #expect(mount.status == 0, "\(mount.standardError)")
        let server = try home.notesfs(["service", "install-server", "--no-start", "--listen", "127.0.0.1:8443"])
        #expect(server.status == 0, "\(server.standardError)")
        let mountUnit = home.unitDirectory + "/notesfs-mount-default.service"
        let serverUnit = home.unitDirectory + "/notesfs-serve.service"
        let mountText = try String(contentsOfFile: mountUnit, encoding: .utf8)
        #expect(mountText.contains("ExecStart=%h/.local/bin/notesfs mount %h/Notes --data %h/.local/share/notesfs/default --foreground"))
        #expect(try String(contentsOfFile: serverUnit, encoding: .utf8).contains(
            "ExecStart=%h/.local/bin/notesfs serve --listen 127.0.0.1:8443 --data %h/.local/share/notesfs/server"))
        #expect(FileManager.default.fileExists(atPath: home.path + "/Notes"), "the mount point was not made")
        try home.verify([mountUnit, serverUnit], user: true)

        // A profile, a path with a space and a percent sign.
        let odd = home.path + "/My Notes %d"
        #expect(try home.notesfs(["service", "install", "--profile", "work", "--mountpoint", odd, "--no-start"]).status == 0)
        let workText = try String(contentsOfFile: home.unitDirectory + "/notesfs-mount-work.service", encoding: .utf8)
        #expect(workText.contains(#"mount "%h/My Notes %%d" --data"#), "\(workText)")
        try home.verify([home.unitDirectory + "/notesfs-mount-work.service"], user: true)
        #expect(try home.notesfs(["service", "install", "--profile", "work"]).status == 2, "a second profile needs --mountpoint")
        #expect(try home.notesfs(["service", "install", "--profile", "a b", "--mountpoint", odd]).status == 2)

        // The system unit (written as root elsewhere; printed here).
        let system = try home.notesfs([
            "service", "install-server", "--system", "--print", "--listen", "0.0.0.0:443",
            "--tls-cert", "/etc/ssl/notesfs.pem", "--tls-key", "/etc/ssl/private/notesfs.key",
        ])
        #expect(system.status == 0, "\(system.standardError)")
        #expect(system.standardOutput.contains("LoadCredential=tls-key:/etc/ssl/private/notesfs.key"))
        #expect(system.standardOutput.contains("--tls-key %d/tls-key"))
        #expect(system.standardOutput.contains("AmbientCapabilities=CAP_NET_BIND_SERVICE"))
        let systemUnit = home.scratch.file("notesfs-serve.service")
        try Data(system.standardOutput.utf8).write(to: URL(fileURLWithPath: systemUnit))
        try home.verify([systemUnit], user: false)

        let listed = try home.notesfs(["service", "list"])
        #expect(listed.lines.filter { $0.contains(".service (user)") }.count == 3, "\(listed.standardOutput)")

        // Uninstall removes what notesfs wrote, and never a unit it did not write.
        // The link 'systemctl enable' makes goes too, even with no manager to ask.
        let wants = home.unitDirectory + "/default.target.wants"
        try FileManager.default.createDirectory(atPath: wants, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: wants + "/notesfs-mount-work.service", withDestinationPath: home.unitDirectory + "/notesfs-mount-work.service")
        #expect(try home.notesfs(["service", "uninstall", "--profile", "work"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: home.unitDirectory + "/notesfs-mount-work.service"))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: wants + "/notesfs-mount-work.service")) == nil)
        #expect(try home.notesfs(["service", "uninstall", "--server"]).status == 0)
        try Data("[Service]\nExecStart=/bin/true\n".utf8).write(to: URL(fileURLWithPath: serverUnit))
        let refused = try home.notesfs(["service", "install-server", "--no-start"])
        #expect(refused.status == 1 && refused.standardError.contains("not written by notesfs"), "\(refused.standardError)")
        #expect(try home.notesfs(["service", "uninstall", "--all"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: mountUnit))
        #expect(FileManager.default.fileExists(atPath: serverUnit), "a unit notesfs did not write was removed")
    }

    /// dist/systemd holds the units as `notesfs service` writes them for a
    /// ~/.local install (user units) and a /usr/local one (the system unit);
    /// they verify as they are.
    @Test func theUnitsInDistAreWhatTheCommandWrites() throws {
        guard let notesfs = Programs.notesfs() else { return }
        let home = try Home(notesfs: notesfs)
        defer { home.scratch.remove() }
        let dist = Programs.repository + "/dist/systemd"
        let userBinary = "/home/user/.local/bin/notesfs"
        let cases: [(file: String, arguments: [String], home: String)] = [
            ("user/notesfs-mount-default.service", ["service", "install", "--print", "--executable", userBinary], "/home/user"),
            ("user/notesfs-serve.service", ["service", "install-server", "--print", "--executable", userBinary], "/home/user"),
            ("system/notesfs-serve.service",
                ["service", "install-server", "--system", "--print", "--executable", "/usr/local/bin/notesfs"], "/root"),
        ]
        for (file, arguments, userHome) in cases {
            let printed = try Programs.run([notesfs] + arguments, environment: ["HOME": userHome])
            let shipped = try String(contentsOfFile: dist + "/" + file, encoding: .utf8)
            #expect(printed.standardOutput == shipped, "dist/systemd/\(file) differs from 'notesfs \(arguments.joined(separator: " "))'; regenerate it")
        }
        // The user units as shipped, with %h the temporary home holding the binary.
        try home.verify([dist + "/user/notesfs-mount-default.service", dist + "/user/notesfs-serve.service"], user: true)
        // The system unit, its binary path pointed at the installed one.
        let systemText = try String(contentsOfFile: dist + "/system/notesfs-serve.service", encoding: .utf8)
        #expect(systemText.contains("ExecStart=/usr/local/bin/notesfs serve"))
        let copy = home.scratch.file("notesfs-serve.service")
        try Data(systemText.replacingOccurrences(of: "/usr/local/bin/notesfs", with: home.binary).utf8)
            .write(to: URL(fileURLWithPath: copy))
        try home.verify([copy], user: false)
    }
}
