import Foundation
import NotesModel

/// Every random choice in a test comes from a seeded `SplitMix64`, and every
/// failure names its seed. `NOTESFS_SEED=<seed>` replays one seed alone.
public enum Seeds {
    /// The seeds a property test runs: the one in `NOTESFS_SEED` when set,
    /// else `0..<count`.
    public static func list(count: Int) -> [UInt64] {
        if let seed = replayed { return [seed] }
        return (0..<UInt64(count)).map { $0 }
    }

    /// The seed of a test that draws one stream: `NOTESFS_SEED` when set,
    /// else `fixed` (so a plain run is the same run every time).
    public static func one(_ fixed: UInt64) -> UInt64 { replayed ?? fixed }

    /// "seed S (replay with NOTESFS_SEED=S)", for failure messages.
    public static func describe(_ seed: UInt64) -> String { "seed \(seed) (replay with NOTESFS_SEED=\(seed))" }

    static var replayed: UInt64? { ProcessInfo.processInfo.environment["NOTESFS_SEED"].flatMap(UInt64.init) }
}

/// Test-table helpers on the model's generator.
extension SplitMix64 {
    /// A number in `range`.
    public mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }

    /// True with probability `percent` / 100.
    public mutating func percent(_ percent: Int) -> Bool { int(0..<100) < percent }

    /// One of `choices`, which must not be empty (test tables, not input).
    public mutating func pick<Element>(_ choices: [Element]) -> Element { choices[int(0..<choices.count)] }

    /// A UUID made of 16 drawn bytes (a seeded stand-in for `UUID()`).
    public mutating func uuid() -> UUID {
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let (high, low) = (next(), next())
        withUnsafeMutableBytes(of: &raw) { out in
            out.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            out.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
        }
        return UUID(uuid: raw)
    }
}
