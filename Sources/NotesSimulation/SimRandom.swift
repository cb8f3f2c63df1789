import NotesModel

/// The simulation's only source of randomness: the model's SplitMix64,
/// seeded, so one seed replays the same run bit for bit.
public struct SimRandom: Sendable {
    private var source: SplitMix64

    public init(seed: UInt64) { source = SplitMix64(seed: seed) }

    public mutating func next() -> UInt64 { source.next() }

    /// A number in `range` (inclusive).
    public mutating func int(_ range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound) + 1
        return range.lowerBound + Int(next() % width)
    }

    /// A number in [0, 1).
    public mutating func unit() -> Double {
        Double(next() >> 11) / Double(UInt64(1) << 53)
    }

    /// True with probability `probability`.
    public mutating func chance(_ probability: Double) -> Bool {
        probability > 0 && unit() < probability
    }

    /// One element, or nil for an empty collection.
    public mutating func pick<T>(_ items: [T]) -> T? {
        items.isEmpty ? nil : items[int(0...(items.count - 1))]
    }

    /// An index drawn by weight; nil when all weights are zero.
    public mutating func weighted(_ weights: [Double]) -> Int? {
        let total = weights.reduce(0, +)
        guard total > 0 else { return nil }
        var roll = unit() * total
        for (index, weight) in weights.enumerated() {
            if roll < weight { return index }
            roll -= weight
        }
        return weights.lastIndex { $0 > 0 }
    }

    /// A child generator whose stream does not depend on how much this one is used later.
    public mutating func split() -> SimRandom { SimRandom(seed: next()) }
}
