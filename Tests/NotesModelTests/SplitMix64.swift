import Foundation

/// SplitMix64 (Steele, Lea and Flood): a tiny seeded generator, so every random test
/// replays exactly from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A number in `range`.
    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }

    /// True with probability `percent` / 100.
    mutating func percent(_ percent: Int) -> Bool { int(0..<100) < percent }

    /// One of `choices`, which must not be empty (test tables, not input).
    mutating func pick<Element>(_ choices: [Element]) -> Element { choices[int(0..<choices.count)] }
}

/// The seeds a property test runs: the one in `NOTESFS_SEED` when set, to replay a
/// failure alone, else `0..<count`. Failures print their seed.
enum Seeds {
    static func list(count: Int) -> [UInt64] {
        if let text = ProcessInfo.processInfo.environment["NOTESFS_SEED"], let seed = UInt64(text) {
            return [seed]
        }
        return (0..<UInt64(count)).map { $0 }
    }
}
