import Foundation
import NotesModel
import Synchronization

/// The key a client binds its database to (`ChangesPage.account`): an opaque,
/// stable name of an account on one server installation.
///
/// `HMAC-SHA256(installation secret, "notesfs account key 1:" + account id)`,
/// its first 16 bytes as hex. Every token of an account gets the same key, so
/// a second token works on an existing profile; the key says nothing about
/// the account's name or integer id (without the secret it cannot be told
/// from random, nor linked to a neighbour's); another installation has
/// another secret, so the same account id there is another key; a restored
/// backup keeps the secret (it is a row of `server_meta`), so keys survive a
/// restore. docs/sync.md ("One account per database") says why.
public enum AccountKey {
    /// The key of `account` on the installation whose secret is `secret`.
    public static func make(secret: String, account: AccountID) -> String {
        let digest = hmacSHA256(key: Array(secret.utf8), message: Array("notesfs account key 1:\(account.rawValue)".utf8))
        return digest.prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// HMAC (RFC 2104) over SHA-256, whose block is 64 bytes.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5c } + inner)
    }
}

/// Account keys already made, so answers do not run HMAC-SHA256 each time.
/// Keyed by account and checked against the secret they were made with.
final class AccountKeyCache: Sendable {
    private let keys = Mutex<[AccountID: (secret: String, key: String)]>([:])
    /// Entries at most; a full cache starts over rather than grow.
    static let entriesMax = 100_000

    func key(secret: String, account: AccountID) -> String {
        if let cached = keys.withLock({ $0[account] }), cached.secret == secret { return cached.key }
        let key = AccountKey.make(secret: secret, account: account)
        keys.withLock { keys in
            if keys.count >= Self.entriesMax { keys.removeAll() }
            keys[account] = (secret, key)
        }
        return key
    }
}
