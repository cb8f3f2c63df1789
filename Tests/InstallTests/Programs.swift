import Foundation
import Testing
import TestSupport

/// Running the built `notesfs` and the system's tools with an environment
/// of the test's choosing (through `env -i`, so nothing of the test
/// runner's environment leaks in).
enum Programs {
    /// The repository's root (this file is Tests/InstallTests/Programs.swift).
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The `PATH` the tools run with: the system's directories only.
    static let systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// The built notesfs, or nil (with a loud skip) when it is not built.
    static func notesfs() -> String? {
        if let path = MountFixture.binaryPath { return path }
        skipLoudly("the notesfs binary is not built (swift build --build-tests)")
        return nil
    }

    /// Runs `arguments` with exactly `environment`.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> MountFixture.Result {
        let assignments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try MountFixture.run(["/usr/bin/env", "-i"] + assignments + arguments)
    }

    /// The full path of a system tool, or nil (with a loud skip naming the
    /// package) when it is not installed.
    static func tool(_ name: String, package: String) -> String? {
        for directory in systemPath.split(separator: ":") where access("\(directory)/\(name)", X_OK) == 0 {
            return "\(directory)/\(name)"
        }
        skipLoudly("\(name) is not installed (apt-get install \(package); scripts/install-deps --test does)")
        return nil
    }

    /// A check that cannot run here: a failure when CI requires every test
    /// (NOTESFS_REQUIRE_ALL_TESTS=1), else a line on standard error.
    static func skipLoudly(_ why: String) {
        if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" {
            Issue.record("SKIPPED, but NOTESFS_REQUIRE_ALL_TESTS=1: \(why)")
        } else {
            FileHandle.standardError.write(Data("⚠️  SKIPPED: \(why)\n".utf8))
        }
    }
}

extension MountFixture.Result {
    /// The lines of standard output.
    var lines: [String] { standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
}
