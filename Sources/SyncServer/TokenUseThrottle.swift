import Foundation
import Synchronization

/// Decides when a token's last use is worth writing: at most once a minute
/// per token, so authentication costs no write per request.
final class TokenUseThrottle: Sendable {
    /// Seconds between two recorded uses of one token.
    static let intervalSeconds: Double = 60
    /// Tokens remembered at most; a full table starts over (a few extra writes).
    static let tokensMax = 10_000

    private let lastRecorded = Mutex<[String: Date]>([:])

    /// True (and remembered) when the token's use at `now` should be written.
    func shouldRecord(_ tokenID: String, at now: Date) -> Bool {
        lastRecorded.withLock { table in
            if let last = table[tokenID], now.timeIntervalSince(last) < Self.intervalSeconds, now >= last {
                return false
            }
            if table.count >= Self.tokensMax { table.removeAll() }
            table[tokenID] = now
            return true
        }
    }
}
