import Foundation

/// Entry points for tests and `notesfs-simulate`.
public enum Simulation {
    /// Where runs keep their SQLite files: memory-backed `/dev/shm` when there
    /// is one (the server commits with `synchronous=FULL`), else the temp directory.
    public static var defaultBaseDirectory: String {
        if let override = ProcessInfo.processInfo.environment["NOTESFS_SIM_DIR"], !override.isEmpty {
            return override
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory), isDirectory.boolValue,
            access("/dev/shm", W_OK) == 0
        {
            return "/dev/shm"
        }
        return NSTemporaryDirectory()
    }

    /// Runs one seed from start to checked end and removes its files.
    public static func run(
        seed: UInt64, breakage: SimBreakage = .none, trace: Bool = false,
        baseDirectory: String = Simulation.defaultBaseDirectory
    ) async -> SimResult {
        let world: SimWorld
        do {
            world = try await SimWorld(seed: seed, breakage: breakage, baseDirectory: baseDirectory, trace: trace)
        } catch {
            return SimResult(
                seed: seed, breakage: breakage, configuration: SimConfiguration(seed: seed),
                violations: ["cannot set up the world: \(error)"], faultCounts: [:], syncRuns: 0, operations: 0,
                trace: [])
        }
        let result = await world.run()
        await world.remove()
        return result
    }

    /// Seeds listed in a regression file: one per line, `#` starts a comment.
    public static func regressionSeeds(fromFile path: String) -> [UInt64] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return UInt64(content.trimmingCharacters(in: .whitespaces))
        }
    }

    /// A short, readable report of one failing seed.
    public static func describe(_ result: SimResult) -> String {
        var lines = ["seed \(result.seed) FAILED (\(result.breakage.rawValue)): \(result.configuration)"]
        lines += result.violations.prefix(12).map { "  - \($0)" }
        if result.violations.count > 12 { lines.append("  … \(result.violations.count - 12) more") }
        if result.staleBasePushes > 0 {
            lines.append("  (\(result.staleBasePushes) pushes went out on bases from before a server restore)")
        }
        lines.append("  replay: scripts/simulate --seed \(result.seed) --trace")
        return lines.joined(separator: "\n")
    }
}
