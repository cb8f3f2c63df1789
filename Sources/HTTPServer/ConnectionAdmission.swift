import CMicroHTTPD
import Foundation
import Synchronization

/// A client's IP address as a dictionary key (IPv4 as its IPv4-mapped IPv6
/// form), read from a `sockaddr` without making a string.
struct ClientAddress: Hashable, Sendable, CustomStringConvertible {
    let high: UInt64
    let low: UInt64

    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            high = 0
            low = 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: v4))
        case AF_INET6:
            let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            (high, low) = withUnsafeBytes(of: bytes) { raw in
                (
                    raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) },
                    raw.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                )
            }
        default:
            return nil
        }
    }

    /// The address as the log shows it (`127.0.0.2`, `::1`).
    var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written: Bool
        if high == 0 && low >> 32 == 0xFFFF {
            var v4 = in_addr(s_addr: UInt32(truncatingIfNeeded: low).bigEndian)
            written = inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count)) != nil
        } else {
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { raw in
                for index in 0..<8 {
                    raw[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
                    raw[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
                }
            }
            written = inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil
        }
        guard written else { return "-" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Admits new connections by their client address before libmicrohttpd
/// makes anything for them: each address has a bucket of `perSecond` new
/// connections, full at first and refilled `perSecond` a second. One address
/// therefore cannot make the server read a head, answer 401 and close
/// thousands of times a second; a connection past its bucket is closed at
/// accept, unread and unanswered, which costs the server an accept and a
/// close. Clients keep their connections open, so they never come near it.
final class ConnectionAdmission: Sendable {
    private struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    /// New connections a second from one address, and the bucket's size.
    let perSecond: Int
    /// Addresses tracked at most; a full bucket is dropped when room is
    /// needed. Past this (a flood from very many addresses) a new address is
    /// admitted untracked: the connection limits still hold.
    private let addressesMax: Int
    private struct State {
        var buckets: [ClientAddress: Bucket] = [:]
        /// When full buckets were last dropped to make room (at most once a
        /// second, so a flood of new addresses cannot make every accept scan).
        var pruned: ContinuousClock.Instant?
    }
    private let state = Mutex(State())

    init(perSecond: Int, addressesMax: Int = 65_536) {
        self.perSecond = perSecond
        self.addressesMax = addressesMax
    }

    /// Takes one new connection from `address`'s bucket; false when empty.
    func admit(_ address: ClientAddress, now: ContinuousClock.Instant = .now) -> Bool {
        let rate = Double(perSecond)
        return state.withLock { state in
            guard var bucket = state.buckets[address] else {
                if state.buckets.count >= addressesMax {
                    if let pruned = state.pruned, now - pruned < .seconds(1) { return true }
                    state.pruned = now
                    Self.dropFull(&state.buckets, now: now, rate: rate)
                    guard state.buckets.count < addressesMax else { return true }
                }
                state.buckets[address] = Bucket(tokens: rate - 1, refilled: now)
                return true
            }
            bucket.tokens = min(rate, bucket.tokens + Self.seconds(now - bucket.refilled) * rate)
            bucket.refilled = now
            let admitted = bucket.tokens >= 1
            if admitted { bucket.tokens -= 1 }
            state.buckets[address] = bucket
            return admitted
        }
    }

    /// Forgets addresses whose bucket has refilled (they are as new).
    private static func dropFull(_ buckets: inout [ClientAddress: Bucket], now: ContinuousClock.Instant, rate: Double) {
        buckets = buckets.filter { $0.value.tokens + seconds(now - $0.value.refilled) * rate < rate }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
