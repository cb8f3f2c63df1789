import Foundation

/// The systemd units `notesfs service install` writes. The text is made
/// here; `dist/systemd/` in the repository holds copies a test keeps equal.
enum SystemdUnits {
    /// Every unit notesfs writes starts with this line; uninstall removes only
    /// files that do, never a unit someone wrote by hand.
    static let marker = "# Written by 'notesfs service"

    /// The user unit that mounts a profile at login: `notesfs-mount-<profile>.service`.
    static func mountUnitName(profile: String) -> String { "notesfs-mount-\(profile).service" }
    /// The server's unit, user or system.
    static let serverUnitName = "notesfs-serve.service"

    /// A user unit that keeps `profile` mounted on `mountpoint` from login on,
    /// and mounts it again if the mount process dies (a dead mount left in
    /// the kernel's table is detached by the next `notesfs mount`).
    static func mount(executable: String, profile: String, dataDirectory: String, mountpoint: String, home: String?)
        -> String
    {
        let command = [executable, "mount", mountpoint, "--data", dataDirectory, "--foreground"]
        return """
            \(marker) install'; 'notesfs service uninstall --profile \(profile)' removes it.
            [Unit]
            Description=notesfs: notes of profile \(profile) on \(specifiers(mountpoint, home: home))
            Documentation=man:notesfs(1)
            StartLimitIntervalSec=120
            StartLimitBurst=5

            [Service]
            Type=notify
            NotifyAccess=main
            ExecStart=\(commandLine(command, home: home))
            Restart=on-failure
            RestartSec=5
            # 2 is a usage error: starting again would not help.
            RestartPreventExitStatus=2
            TimeoutStopSec=30

            [Install]
            WantedBy=default.target

            """
    }

    /// A unit that runs `notesfs serve` with `serveArguments`: a user unit, or
    /// with `system` a system unit that runs as `runAs` with only its data
    /// directory writable.
    static func server(executable: String, serveArguments: [String], home: String?, system: SystemServer?) -> String {
        var unit = [
            "\(marker) install-server'; 'notesfs service uninstall --server\(system == nil ? "" : " --system")' removes it.",
            "[Unit]",
            "Description=notesfs sync server",
            "Documentation=man:notesfs(1)",
        ]
        if system != nil {
            unit += ["Wants=network-online.target", "After=network-online.target"]
            if serveArguments.contains("--postgres") { unit.append("After=postgresql.service") }
        }
        unit += ["StartLimitIntervalSec=120", "StartLimitBurst=5", "", "[Service]", "Type=notify", "NotifyAccess=main"]
        var arguments = serveArguments
        if let system {
            unit += ["User=\(system.user)", "Group=\(system.group)"]
            if let state = system.stateDirectory { unit += ["StateDirectory=\(state)", "StateDirectoryMode=0700"] }
            for path in system.writablePaths { unit.append("ReadWritePaths=\(commandLine([path], home: nil))") }
            // TLS files are usually readable by root alone: systemd hands the
            // service copies in its credentials directory (%d).
            for (option, name) in [("--tls-cert", "tls-cert"), ("--tls-key", "tls-key")] {
                guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count else { continue }
                unit.append("LoadCredential=\(name):\(specifiers(arguments[index + 1], home: nil))")
                arguments[index + 1] = "%d/\(name)"
            }
            if system.privilegedPort { unit.append("AmbientCapabilities=CAP_NET_BIND_SERVICE") }
        }
        let command = [executable, "serve"] + arguments
        unit.append("ExecStart=" + commandLine(command, home: system == nil ? home : nil, keepingSpecifiers: true))
        unit += [
            "Restart=on-failure",
            "RestartSec=5",
            "# 2 is a usage error: starting again would not help.",
            "RestartPreventExitStatus=2",
            "# serve finishes requests in flight for up to 10 s after SIGTERM.",
            "TimeoutStopSec=30",
        ]
        if system != nil {
            unit += [
                "# The server needs its data directory and the network, nothing else.",
                "NoNewPrivileges=yes",
                "ProtectSystem=strict",
                "ProtectHome=yes",
                "PrivateTmp=yes",
                "PrivateDevices=yes",
                "ProtectKernelTunables=yes",
                "ProtectKernelModules=yes",
                "ProtectControlGroups=yes",
                "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
                "RestrictNamespaces=yes",
                "LockPersonality=yes",
            ]
        }
        unit += ["", "[Install]", "WantedBy=\(system == nil ? "default.target" : "multi-user.target")", ""]
        return unit.joined(separator: "\n")
    }

    /// What a system server unit needs beyond the user one.
    struct SystemServer {
        var user: String
        var group: String
        /// `StateDirectory=` (relative to /var/lib), when the data lives there.
        var stateDirectory: String?
        /// Paths outside /var/lib the service writes (its data, its counter mark).
        var writablePaths: [String]
        /// True when it listens on a port below 1024.
        var privilegedPort: Bool
    }

    /// An `ExecStart=` line: each word with `%` and `$` escaped, quoted when
    /// it holds a space, a quote, a backslash or a `;`, and paths under
    /// `home` written as `%h/…` so the unit reads the same for every user.
    /// `keepingSpecifiers` leaves the `%d/…` words this file put in alone.
    static func commandLine(_ words: [String], home: String?, keepingSpecifiers: Bool = false) -> String {
        words.map { word in
            if keepingSpecifiers, word.hasPrefix("%d/") { return word }
            return quoted(specifiers(word, home: home))
        }.joined(separator: " ")
    }

    /// `text` with systemd's `%` specifiers and `$` variables escaped, and a
    /// leading `home` directory written as `%h`.
    static func specifiers(_ text: String, home: String?) -> String {
        func escape(_ part: String) -> String {
            part.replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$")
        }
        if let home, home != "/", text == home { return "%h" }
        if let home, home != "/", text.hasPrefix(home + "/") { return "%h" + escape(String(text.dropFirst(home.count))) }
        return escape(text)
    }

    static func quoted(_ word: String) -> String {
        let special = word.isEmpty || word.contains { $0 == " " || $0 == "\t" || $0 == "\"" || $0 == "'" || $0 == "\\" || $0 == ";" }
        guard special else { return word }
        return "\"" + word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
