import Foundation
import NotesSimulation
import ProcessKit
import TestSupport
import Testing

/// The seeded chaos simulation (docs/simulation.md). A failing seed prints
/// itself; replay it with `scripts/simulate --seed S --trace` or
/// `NOTESFS_SIM_SEED=S swift test --filter SimulationTests`.
@Suite struct SimulationTests {
    /// The fixed range a full test run covers: seeds 1...1200, or the first
    /// `NOTESFS_SIM_SEEDS` of them (`scripts/test --quick` runs 100).
    static let ciSeeds: ClosedRange<UInt64> = 1...seedCount(default: 1200)

    static func seedCount(default count: UInt64) -> UInt64 {
        guard let text = ProcessInfo.processInfo.environment["NOTESFS_SIM_SEEDS"] else { return count }
        guard let value = UInt64(text), value >= 1 else {
            FileHandle.standardError.write(Data("NOTESFS_SIM_SEEDS='\(text)' is not a seed count; running \(count)\n".utf8))
            return count
        }
        return value
    }

    static func seedFile(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(name).path
    }

    static var regressionSeeds: [UInt64] { Simulation.regressionSeeds(fromFile: seedFile("regression-seeds.txt")) }

    /// Runs seeds two at a time (the CI machine has two cores) and returns the failures.
    static func failures(_ seeds: [UInt64], breakage: SimBreakage = .none) async -> [SimResult] {
        var failed: [SimResult] = []
        await withTaskGroup(of: SimResult.self) { group in
            var iterator = seeds.makeIterator()
            for _ in 0..<2 {
                if let seed = iterator.next() { group.addTask { await Simulation.run(seed: seed, breakage: breakage) } }
            }
            while let result = await group.next() {
                if !result.passed { failed.append(result) }
                if let seed = iterator.next() { group.addTask { await Simulation.run(seed: seed, breakage: breakage) } }
            }
        }
        return failed.sorted { $0.seed < $1.seed }
    }

    @Test func everySeedInTheFixedRangeKeepsEveryInvariant() async throws {
        var seeds = Array(Self.ciSeeds)
        if let only = ProcessInfo.processInfo.environment["NOTESFS_SIM_SEED"].flatMap(UInt64.init) { seeds = [only] }
        let failed = await Self.failures(seeds)
        for result in failed { Issue.record(Comment(rawValue: Simulation.describe(result))) }
        #expect(failed.isEmpty, "failing seeds: \(failed.map(\.seed))")
    }

    @Test func everyRegressionSeedStillPasses() async throws {
        let seeds = Self.regressionSeeds
        #expect(!seeds.isEmpty)
        let failed = await Self.failures(seeds)
        for result in failed { Issue.record(Comment(rawValue: Simulation.describe(result))) }
        #expect(failed.isEmpty, "failing regression seeds: \(failed.map(\.seed))")
    }

    @Test func oneSeedReplaysTheSameRunExactly() async throws {
        let first = await Simulation.run(seed: 7, trace: true)
        let second = await Simulation.run(seed: 7, trace: true)
        #expect(first.trace.count == second.trace.count)
        #expect(first.trace.count > 20)
        let difference = zip(first.trace, second.trace).first { $0 != $1 }
        #expect(difference == nil, "first difference: \(String(describing: difference))")
        #expect(first.faultCounts == second.faultCounts)
    }

    /// Swift seeds its hashing afresh in every process, so whatever a run
    /// does in a `Set`'s or a `Dictionary`'s order must be put in a fixed
    /// order first: a seed one process printed must replay in another. Seed
    /// 41 with this breakage drew its kernel notifications' delays in such an
    /// order (each process had about even odds of another run).
    @Test func aSeedReplaysTheSameRunInAnotherProcess() throws {
        let simulate = try #require(
            MountFixture.builtProductPath("notesfs-simulate"), "swift build --build-tests builds notesfs-simulate")
        let directory = try TemporaryDirectory(prefix: "notesfs-replay")
        defer { directory.remove() }
        var traces: [String] = []
        for run in 0..<4 {
            let path = directory.file("trace-\(run)")
            var options = ChildProcess.Options(standardOutput: .file(path), standardError: .standardOutput)
            options.searchPath = false
            let status = ChildProcess.run(
                [simulate, "--seed", "41", "--breakage", SimBreakage.staleSaveTakesEveryWrite.rawValue, "--trace"],
                options)
            #expect(status == 0 || status == 1, "notesfs-simulate exited \(status)")
            traces.append(try String(contentsOfFile: path, encoding: .utf8))
        }
        #expect(traces[0].split(separator: "\n").count > 100)
        for (run, trace) in traces.enumerated().dropFirst() {
            let difference = zip(traces[0].split(separator: "\n"), trace.split(separator: "\n")).first { $0 != $1 }
            #expect(trace == traces[0], "run \(run) differs from run 0, first at \(String(describing: difference))")
        }
    }

    @Test func aSeedThatRunsTheRealSchedulersReplaysTheSameRunExactly() async throws {
        let seed = try #require((UInt64(1)...50).first { SimConfiguration(seed: $0).runsSchedulers })
        let first = await Simulation.run(seed: seed, trace: true)
        let second = await Simulation.run(seed: seed, trace: true)
        #expect(first.passed, "\(Simulation.describe(first))")
        #expect((first.faultCounts[.schedulerRun] ?? 0) > 0, "the schedulers ran the engine")
        #expect(first.trace.contains { $0.contains("scheduler at") }, "the schedulers' own log lines are in the trace")
        #expect(first.trace.count == second.trace.count)
        let difference = zip(first.trace, second.trace).first { $0 != $1 }
        #expect(difference == nil, "first difference: \(String(describing: difference))")
        #expect(first.faultCounts == second.faultCounts)
    }

    @Test func theRunsReallyExerciseTheFaults() async throws {
        var totals: [SimFault: Int] = [:]
        for seed in UInt64(1)...40 {
            let result = await Simulation.run(seed: seed)
            totals.merge(result.faultCounts, uniquingKeysWith: +)
        }
        for fault in SimFault.allCases where fault != .offlineRequest {
            #expect((totals[fault] ?? 0) > 0, "no run in 40 seeds exercised \(fault.rawValue)")
        }
    }

    /// A broken variant must be caught within a few seeds.
    static func firstCatch(_ breakage: SimBreakage, within seeds: ClosedRange<UInt64>) async -> SimResult? {
        for seed in seeds {
            let result = await Simulation.run(seed: seed, breakage: breakage)
            if !result.passed { return result }
        }
        return nil
    }

    @Test func aMergeThatDropsTheLocalSideIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.mergeDropsLocal, within: 1...12))
        #expect(caught.violations.contains { $0.contains("lost text") || $0.contains("dirty local text") })
    }

    @Test func aMergeThatKeepsOnlyOneOfTwoAppendsIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.mergeKeepsOneOfTwoAppends, within: 1...30))
        #expect(caught.violations.contains { $0.contains("lost text") || $0.contains("missing from its notes") })
    }

    @Test func aConflictCopyPerClashIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.copyPerClash, within: 1...30))
        #expect(caught.violations.contains { $0.contains("copy from this device") || $0.contains("one per note and device") })
    }

    @Test func aPullOverDirtyTextIsCaughtAsItHappens() async throws {
        let caught = try #require(await Self.firstCatch(.pullOverDirty, within: 1...12))
        #expect(caught.violations.contains { $0.contains("removed dirty local text") })
    }

    @Test func anEngineThatForgetsToFreezeIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.forgetsToFreeze, within: 1...40))
        #expect(caught.violations.contains { $0.contains("lost") || $0.contains("differs from the server") })
    }

    @Test func aResyncThatDeletesWhatARestoredServerLacksIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.resyncDeletesWhatTheServerLacks, within: 1...40))
        #expect(caught.violations.contains { $0.contains("lost text") })
    }

    @Test func aMassDeleteGuardThatCountsPushByPushIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.guardCountsPerPush, within: 1...40))
        #expect(caught.violations.contains { $0.contains("walked past the guard") })
    }

    @Test func aMountThatDropsOAppendIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.appendAtKernelOffset, within: 1...60))
        #expect(caught.violations.contains { $0.contains("lost text") || $0.contains("missing from its notes") })
    }

    @Test func aMountThatIgnoresKernelViewsIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.ignoreKernelView, within: 1...50))
        #expect(caught.violations.contains { $0.contains("lost text") || $0.contains("missing from its notes") })
    }

    @Test func aMountThatServesReadsThroughStaleViewsFromTheNewTextIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.readsIgnoreKernelView, within: 1...40))
        #expect(caught.violations.contains { $0.contains("lost text") || $0.contains("missing from its notes") })
    }

    @Test func aMountThatJudgesAPositionalWriteByAnotherProgramsReadIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.positionalWritesJudgedByReads, within: 1...40))
        #expect(caught.violations.contains { $0.contains("lost text") || $0.contains("missing from its notes") })
    }

    @Test func aStaleSaveThatTakesEveryWriteWithinItsSecondIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.staleSaveTakesEveryWrite, within: 1...80))
        #expect(caught.violations.contains {
            $0.contains("lost text") || $0.contains("missing from its notes") || $0.contains("NUL bytes")
        })
    }

    @Test func anAtomicSaveThatIgnoresWhatItsProgramReadIsCaughtAsLostText() async throws {
        let caught = try #require(await Self.firstCatch(.atomicSaveIgnoresView, within: 1...40))
        #expect(caught.violations.contains { $0.contains("lost text") || $0.contains("missing from its notes") })
    }

    @Test func aStaleWriteThatIgnoresItsOffsetIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.staleWritesIgnoreTheirOffset, within: 1...60))
        #expect(caught.violations.contains { $0.contains("NUL bytes") || $0.contains("lost text") })
    }

    @Test func aServerWithoutIdempotencyIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.noIdempotency, within: 1...12))
        #expect(caught.violations.contains { $0.contains("answered differently on a retry") })
    }

    @Test func aSchedulerWhoseDebounceNeverEndsIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.debounceNeverFires, within: 1...40))
        #expect(caught.violations.contains { $0.contains("the schedulers did not bring the devices to quiet") })
    }

    @Test func aSchedulerThatNeverRetriesAFailedRunIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.backoffNeverRetries, within: 1...40))
        #expect(caught.violations.contains { $0.contains("the schedulers did not bring the devices to quiet") })
    }

    @Test func chunksThatOutliveAWholeBodyWriteAreCaught() async throws {
        let caught = try #require(await Self.firstCatch(.chunksOutliveWholeWrites, within: 1...40))
        #expect(!caught.violations.isEmpty)
    }

    @Test func anEngineThatSettlesAFailedPushAsRefusedIsCaught() async throws {
        let caught = try #require(await Self.firstCatch(.failureSettlesAsRefused, within: 1...40))
        #expect(caught.violations.contains { $0.contains("though the server never refused it") })
    }
}
