/// Random text for the values a store makes once and keeps: its epoch and
/// its installation secret.
package enum RandomHex {
    /// `bytes` bytes from the system's secure generator, as lowercase hex.
    package static func make(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }
}
