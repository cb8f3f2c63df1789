import Foundation

/// Random (version 4) UUIDs from the standard library's system generator,
/// which is one `getrandom(2)` call on Linux. Foundation's `UUID()` opens,
/// reads and closes `/dev/urandom` for every id: measured at about 4 % of the
/// mount daemon's CPU during `cp -r` (a new note and its outbox row take two).
public enum RandomUUID {
    /// A new random UUID (RFC 9562 version 4, variant 10).
    public static func make() -> UUID {
        var generator = SystemRandomNumberGenerator()
        return make(high: generator.next(), low: generator.next())
    }

    /// The version 4 UUID made of these 128 random bits (version and variant overwritten).
    static func make(high: UInt64, low: UInt64) -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
