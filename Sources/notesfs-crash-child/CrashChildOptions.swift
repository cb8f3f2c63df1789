/// The crash child's command line.
struct CrashChildOptions {
    /// The store's database file.
    var databasePath = ""
    /// Drives every choice; with `run` it makes the sequence of saves deterministic.
    var seed: UInt64 = 1
    /// Which run of the test this is; part of every title and body token, so
    /// nothing one run writes can be mistaken for another run's save.
    var run = 0
    /// A safety stop: the child exits by itself after this long.
    var maxSeconds = 20.0
    /// Stop inside the transaction of this save (counted from 1), report
    /// `stopped`, and wait there to be killed; nil to save until killed.
    var stopInSave: Int?

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static let usage = "usage: notesfs-crash-child --db PATH --seed N --run K [--max-seconds S] [--stop-in-save N]"

    init(_ arguments: [String]) throws(UsageError) {
        var index = 0
        func value(_ name: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(description: "\(name) needs a value. \(Self.usage)") }
            return arguments[index]
        }
        while index < arguments.count {
            let name = arguments[index]
            switch name {
            case "--db": databasePath = try value(name)
            case "--seed":
                guard let seed = UInt64(try value(name)) else { throw UsageError(description: "bad --seed") }
                self.seed = seed
            case "--run":
                guard let run = Int(try value(name)), run >= 0 else { throw UsageError(description: "bad --run") }
                self.run = run
            case "--max-seconds":
                guard let seconds = Double(try value(name)), seconds > 0 else {
                    throw UsageError(description: "bad --max-seconds")
                }
                maxSeconds = seconds
            case "--stop-in-save":
                guard let save = Int(try value(name)), save > 0 else { throw UsageError(description: "bad --stop-in-save") }
                stopInSave = save
            default:
                throw UsageError(description: "unknown argument '\(name)'. \(Self.usage)")
            }
            index += 1
        }
        guard !databasePath.isEmpty else { throw UsageError(description: Self.usage) }
    }
}
