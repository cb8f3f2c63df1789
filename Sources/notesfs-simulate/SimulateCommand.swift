import Foundation
import NotesSimulation

/// `notesfs-simulate`: runs seeds of the chaos simulation (scripts/simulate).
///
///     notesfs-simulate --seeds N [--from S] [--jobs J] [--breakage KIND]
///     notesfs-simulate --seed S [--trace] [--breakage KIND]
@main
struct SimulateCommand {
    static let usage = """
        Usage: notesfs-simulate --seeds N [--from S] [--jobs J] [--breakage KIND]
               notesfs-simulate --seed S [--trace] [--breakage KIND]
        KIND: \(SimBreakage.allCases.map(\.rawValue).joined(separator: ", "))
        """

    struct Options {
        var seeds = 100
        var from: UInt64 = 1
        var jobs = 2
        var single: UInt64?
        var trace = false
        var breakage = SimBreakage.none
    }

    static func parse(_ arguments: [String]) -> Options? {
        var options = Options()
        var index = 0
        func value() -> String? {
            index += 1
            return index < arguments.count ? arguments[index] : nil
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--seeds": guard let n = value().flatMap(Int.init), n > 0 else { return nil }; options.seeds = n
            case "--from": guard let s = value().flatMap(UInt64.init) else { return nil }; options.from = s
            case "--jobs": guard let j = value().flatMap(Int.init), j > 0, j <= 64 else { return nil }; options.jobs = j
            case "--seed": guard let s = value().flatMap(UInt64.init) else { return nil }; options.single = s
            case "--trace": options.trace = true
            case "--breakage":
                guard let kind = value().flatMap(SimBreakage.init(rawValue:)) else { return nil }
                options.breakage = kind
            case "-h", "--help":
                print(usage)
                exit(0)
            default: return nil
            }
            index += 1
        }
        return options
    }

    static func main() async {
        guard let options = parse(Array(CommandLine.arguments.dropFirst())) else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        }
        if let seed = options.single {
            let result = await Simulation.run(seed: seed, breakage: options.breakage, trace: options.trace)
            if options.trace { for line in result.trace { print(line) } }
            print(summary([result], seconds: nil))
            if !result.passed { print(Simulation.describe(result)) }
            exit(result.passed ? 0 : 1)
        }
        let started = Date()
        var results: [SimResult] = []
        var failures: [SimResult] = []
        var lastReport = Date()
        await withTaskGroup(of: SimResult.self) { group in
            var next = options.from
            let end = options.from + UInt64(options.seeds)
            for _ in 0..<min(options.jobs, options.seeds) {
                let seed = next
                next += 1
                group.addTask { await Simulation.run(seed: seed, breakage: options.breakage) }
            }
            while let result = await group.next() {
                results.append(result)
                if !result.passed {
                    failures.append(result)
                    print(Simulation.describe(result))
                }
                if next < end {
                    let seed = next
                    next += 1
                    group.addTask { await Simulation.run(seed: seed, breakage: options.breakage) }
                }
                if Date().timeIntervalSince(lastReport) >= 5 || results.count == options.seeds {
                    lastReport = Date()
                    let elapsed = Date().timeIntervalSince(started)
                    print(String(
                        format: "progress %d/%d seeds, %.1f runs/s, %d failing%@", results.count, options.seeds,
                        Double(results.count) / max(elapsed, 0.001), failures.count,
                        failures.isEmpty ? "" : " (" + failures.prefix(10).map { String($0.seed) }.joined(separator: " ") + ")"))
                    fflush(nil)
                }
            }
        }
        print(summary(results, seconds: Date().timeIntervalSince(started)))
        if !failures.isEmpty {
            let restored = failures.filter { ($0.faultCounts[.serverRestore] ?? 0) > 0 }.map(\.seed).sorted()
            let others = failures.filter { ($0.faultCounts[.serverRestore] ?? 0) == 0 }.map(\.seed).sorted()
            print("failing seeds after a server restore: " + restored.map(String.init).joined(separator: " "))
            print("failing seeds without a restore: " + others.map(String.init).joined(separator: " "))
        }
        exit(failures.isEmpty ? 0 : 1)
    }

    static func summary(_ results: [SimResult], seconds: Double?) -> String {
        var totals: [SimFault: Int] = [:]
        for result in results { totals.merge(result.faultCounts, uniquingKeysWith: +) }
        let runs = max(results.count, 1)
        let syncs = results.reduce(0) { $0 + $1.syncRuns }
        let operations = results.reduce(0) { $0 + $1.operations }
        var lines = [
            "\(results.count) runs, \(results.filter { !$0.passed }.count) failing"
                + (seconds.map { String(format: ", %.1f s, %.2f runs/s", $0, Double(results.count) / max($0, 0.001)) } ?? ""),
            String(format: "per run: %.1f sync runs, %.1f local operations", Double(syncs) / Double(runs),
                   Double(operations) / Double(runs)),
            "faults (total, per run):",
        ]
        for fault in SimFault.allCases {
            let total = totals[fault] ?? 0
            let name = fault.rawValue.padding(toLength: 26, withPad: " ", startingAt: 0)
            lines.append("  " + name + String(format: " %8d  %6.2f", total, Double(total) / Double(runs)))
        }
        return lines.joined(separator: "\n")
    }
}
