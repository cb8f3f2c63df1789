import Foundation
import Testing
import TestSupport

/// `notesfs install` into a temporary home's `~/.local`, as scripts/run does,
/// and `notesfs uninstall` after it: the program runs with an empty
/// environment, `man notesfs` finds a page that renders, each shell finds
/// and parses its completion, and uninstall leaves nothing but the notes.
@Suite(.serialized) struct InstallTests {
    @Test func anInstallIntoAPrefixWorksWithAnEmptyEnvironmentAndUninstallKeepsTheNotes() throws {
        guard let notesfs = Programs.notesfs() else { return }
        let scratch = try TemporaryDirectory(prefix: "notesfs-install")
        defer { scratch.remove() }
        let home = scratch.file("home")
        let prefix = home + "/.local"
        let environment = ["HOME": home, "PATH": Programs.systemPath, "LANG": "C.UTF-8"]
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)

        let install = try Programs.run([notesfs, "install", "--prefix", prefix], environment: environment)
        #expect(install.status == 0, "\(install.standardError)")
        let files = [
            ("bin/notesfs", 0o755), ("share/man/man1/notesfs.1", 0o644),
            ("share/bash-completion/completions/notesfs", 0o644), ("share/zsh/site-functions/_notesfs", 0o644),
            ("share/fish/vendor_completions.d/notesfs.fish", 0o644),
        ]
        for (file, mode) in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: prefix + "/" + file)
            #expect((attributes[.posixPermissions] as? Int) == mode, "\(file)")
        }
        #expect(install.standardOutput.contains("is not on your PATH"), "\(install.standardOutput)")

        // Again: nothing is rewritten.
        let modified = try FileManager.default.attributesOfItem(atPath: prefix + "/bin/notesfs")[.modificationDate] as? Date
        let again = try Programs.run([notesfs, "install", "--prefix", prefix], environment: environment)
        #expect(again.status == 0 && again.standardOutput.contains("already up to date"), "\(again.standardOutput)")
        #expect(try FileManager.default.attributesOfItem(atPath: prefix + "/bin/notesfs")[.modificationDate] as? Date == modified)

        // The installed program with nothing in its environment at all.
        let installed = prefix + "/bin/notesfs"
        let version = try Programs.run([installed, "--version"])
        #expect(version.status == 0)
        #expect(version.standardOutput.wholeMatch(of: /notesfs \d+\.\d+\.\d+\n/) != nil, "\(version.standardOutput)")
        let help = try Programs.run([installed, "--help"])
        #expect(help.status == 0 && help.standardOutput.contains("--version"))
        // And real work without HOME or PATH: an import and a search.
        let notes = scratch.file("notes")
        try FileManager.default.createDirectory(atPath: notes, withIntermediateDirectories: true)
        try Data("Pancakes\nflour, eggs, milk\n".utf8).write(to: URL(fileURLWithPath: notes + "/Pancakes.md"))
        let data = home + "/.local/share/notesfs/default"
        let imported = try Programs.run([installed, "import", notes, "--data", data])
        #expect(imported.status == 0, "\(imported.standardError)")
        let found = try Programs.run([installed, "search", "eggs", "--data", data])
        #expect(found.status == 0 && found.standardOutput.contains("Pancakes.md"), "\(found.standardOutput)\(found.standardError)")

        try checkManualPage(prefix: prefix, environment: environment)
        try checkCompletion(prefix: prefix, home: home, environment: environment)

        // A mount of a profile is the user's: uninstall unmounts it (and waits for its process).
        let mountpoint = home + "/Notes"
        let mounting = MountFixture.shouldRun
        if mounting {
            try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
            let mounted = try Programs.run([installed, "mount", mountpoint], environment: environment)
            #expect(mounted.status == 0, "\(mounted.standardError)")
        }
        defer { if mounting { _ = try? MountFixture.run(["fusermount3", "-u", "-z", mountpoint]) } }

        let uninstall = try Programs.run([installed, "uninstall"], environment: environment)
        #expect(uninstall.status == 0, "\(uninstall.standardError)")
        if mounting {
            #expect(uninstall.standardOutput.contains("Unmounted \(mountpoint)."), "\(uninstall.standardOutput)")
            let table = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
            #expect(!table.contains(" \(mountpoint) "), "still mounted")
            let lock = open(data + "/mount.lock", O_RDONLY)
            #expect(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0, "the mount process still holds its lock")
            close(lock)
        }
        for (file, _) in files {
            #expect(!FileManager.default.fileExists(atPath: prefix + "/" + file), "\(file) is still there")
        }
        #expect(FileManager.default.fileExists(atPath: data + "/notes.sqlite"), "uninstall removed the notes")
        #expect(uninstall.standardOutput.contains("Your notes are still in \(home)/.local/share/notesfs"), "\(uninstall.standardOutput)")
    }

    /// `man notesfs` finds the page through PATH (man-db looks beside each
    /// bin directory), and it renders without a single groff warning.
    func checkManualPage(prefix: String, environment: [String: String]) throws {
        guard let man = Programs.tool("man", package: "man-db") else { return }
        var withPrefix = environment
        withPrefix["PATH"] = prefix + "/bin:" + Programs.systemPath
        let located = try Programs.run([man, "-w", "notesfs"], environment: withPrefix)
        #expect(located.standardOutput == prefix + "/share/man/man1/notesfs.1\n", "\(located.standardOutput)\(located.standardError)")
        var rendering = environment
        rendering["MANWIDTH"] = "100"
        let rendered = try Programs.run([man, "--warnings", "-l", prefix + "/share/man/man1/notesfs.1"], environment: rendering)
        #expect(rendered.status == 0)
        #expect(rendered.standardError.isEmpty, "groff warnings: \(rendered.standardError)")
        #expect(rendered.standardOutput.contains("notesfs - your notes as plain files"))
        for command in ["status", "mount", "serve", "service", "completion", "uninstall"] {
            #expect(rendered.standardOutput.contains("notesfs \(command)\n"), "no section for \(command)")
        }
        // Flags render as ASCII hyphens, so they can be copied into a shell.
        #expect(rendered.standardOutput.contains("notesfs mount <dir> [--data DIR | --profile NAME] [--foreground]"))
    }

    /// Every shell parses its script and finds it where install put it.
    func checkCompletion(prefix: String, home: String, environment: [String: String]) throws {
        let bashScript = prefix + "/share/bash-completion/completions/notesfs"
        if let bash = Programs.tool("bash", package: "bash") {
            #expect(try Programs.run([bash, "-n", bashScript]).status == 0)
            // Profiles complete from the data directory.
            try FileManager.default.createDirectory(
                atPath: home + "/.local/share/notesfs/work", withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: home + "/.local/share/notesfs/work/notes.sqlite", contents: Data())
            let script = """
                source '\(bashScript)'
                try_complete() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _notesfs; echo "${COMPREPLY[*]}"; }
                try_complete notesfs acc
                try_complete notesfs account ''
                try_complete notesfs account add ''
                try_complete notesfs mount --profile ''
                try_complete notesfs service --lis
                """
            let result = try Programs.run([bash, "-c", script], environment: environment)
            #expect(result.lines == ["account", "add list tokens revoke", "", "default work", "--listen", ""], "\(result.lines) \(result.standardError)")
            // bash-completion loads it from ~/.local/share/bash-completion/completions by itself.
            let loader = "/usr/share/bash-completion/bash_completion"
            if FileManager.default.fileExists(atPath: loader) {
                let loaded = try Programs.run(
                    [bash, "-c", "source \(loader); __load_completion notesfs; complete -p notesfs"], environment: environment)
                #expect(loaded.standardOutput.contains("-F _notesfs"), "\(loaded.standardOutput)\(loaded.standardError)")
            } else {
                Programs.skipLoudly("\(loader) is missing (apt-get install bash-completion)")
            }
        }
        if let zsh = Programs.tool("zsh", package: "zsh") {
            let directory = prefix + "/share/zsh/site-functions"
            #expect(try Programs.run([zsh, "-n", directory + "/_notesfs"]).status == 0)
            let registered = try Programs.run(
                [zsh, "-f", "-c", "fpath=(\(directory) $fpath); autoload -Uz compinit; compinit -u -D; print -r -- ${_comps[notesfs]}"],
                environment: environment)
            #expect(registered.standardOutput == "_notesfs\n", "\(registered.standardOutput)\(registered.standardError)")
        }
        if let fish = Programs.tool("fish", package: "fish") {
            #expect(try Programs.run([fish, "-n", prefix + "/share/fish/vendor_completions.d/notesfs.fish"]).status == 0)
            // fish reads ~/.local/share/fish/vendor_completions.d by itself
            // (for a command on PATH).
            var withPrefix = environment
            withPrefix["PATH"] = prefix + "/bin:" + Programs.systemPath
            let offered = try Programs.run([fish, "-c", "complete -C 'notesfs account '"], environment: withPrefix)
            #expect(offered.standardOutput.split(separator: "\n").map(String.init).sorted() == ["add", "list", "revoke", "tokens"],
                "\(offered.standardOutput)\(offered.standardError)")
        }
    }

    @Test func scriptsRunBuildsWithTheSwiftRuntimeLinkedStatically() throws {
        let run = try String(contentsOfFile: Programs.repository + "/scripts/run", encoding: .utf8)
        let build = run.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("swift build") }
        #expect(build.count == 1 && build[0].contains("-c release") && build[0].contains("--static-swift-stdlib"), "\(build)")
        #expect(run.contains("install --prefix \"$PREFIX\""))
        let uninstall = try String(contentsOfFile: Programs.repository + "/scripts/uninstall", encoding: .utf8)
        #expect(uninstall.contains("uninstall --prefix \"$PREFIX\""))
        // No ldd of .build/release/notesfs here: other release builds (the
        // benchmarks') share that path without the static runtime, so what
        // it holds says nothing about scripts/run. The link line above is
        // what decides it.
    }
}
