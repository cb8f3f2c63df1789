/// Exponential backoff with jitter for failed sync runs (DESIGN.md "Sync
/// engine rules"): the n-th failure in a row waits a random time between half
/// and all of `min(cap, base · 2ⁿ⁻¹)`. The random source is injected.
public struct Backoff: Sendable, Equatable {
    public var baseSeconds: Double
    public var capSeconds: Double
    /// Failures in a row since the last success.
    public private(set) var failures = 0

    /// Failures beyond this no longer grow the delay (it is at the cap long before).
    static let exponentMax = 30

    public init(baseSeconds: Double = 1, capSeconds: Double = 300) {
        precondition(baseSeconds > 0 && capSeconds >= baseSeconds, "backoff bounds out of order")
        self.baseSeconds = baseSeconds
        self.capSeconds = capSeconds
    }

    /// Records a failure and returns how long to wait before the next try.
    /// `unit` is a random number in `0..<1`.
    public mutating func failed(unit: Double) -> Double {
        failures += 1
        let exponent = min(failures - 1, Self.exponentMax)
        let ceiling = min(capSeconds, baseSeconds * Double(1 << exponent))
        let jitter = 0.5 + 0.5 * min(max(unit, 0), 1)
        let delay = ceiling * jitter
        assert(delay > 0 && delay <= capSeconds)
        return delay
    }

    /// Records a success: the next failure starts from the base again.
    public mutating func succeeded() { failures = 0 }
}
