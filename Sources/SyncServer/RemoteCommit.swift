import NotesModel

/// Versions `(from, to]` of an account's feed in `epoch` that one device's
/// push made with nothing else in between (see `OwnChangesLedger`).
public struct OwnChanges: Sendable, Hashable {
    public let device: DeviceID
    public let epoch: String
    public let from: Int64
    public let to: Int64

    public init(device: DeviceID, epoch: String, from: Int64, to: Int64) {
        self.device = device
        self.epoch = epoch
        self.from = from
        self.to = to
    }
}

/// A commit made by another process sharing the store, as its notification
/// told it: the account, and the pushing device's own stretch when the push
/// found the feed at that device's cursor.
public struct RemoteCommit: Sendable, Hashable {
    public let account: AccountID
    public let own: OwnChanges?

    public init(account: AccountID, own: OwnChanges? = nil) {
        self.account = account
        self.own = own
    }

    /// The notification text, after the `c:<instance>:` prefix:
    /// `<account>` or `<account>:<device>:<from>:<to>:<epoch>` (under 140
    /// bytes, far below PostgreSQL's 8,000-byte payload limit).
    package var payload: String {
        guard let own else { return String(account.rawValue) }
        return "\(account.rawValue):\(own.device):\(own.from):\(own.to):\(own.epoch)"
    }

    /// Reads `payload`'s fields (already split at `:`); nil for anything else.
    package init?(payloadFields fields: ArraySlice<Substring>) {
        guard let first = fields.first, let account = Int64(first) else { return nil }
        switch fields.count {
        case 1:
            self.init(account: AccountID(account))
        case 5:
            let rest = Array(fields.dropFirst())
            guard let device = DeviceID(String(rest[0])), let from = Int64(rest[1]), let to = Int64(rest[2]),
                from < to, !rest[3].isEmpty
            else { return nil }
            let own = OwnChanges(device: device, epoch: String(rest[3]), from: from, to: to)
            self.init(account: AccountID(account), own: own)
        default:
            return nil
        }
    }
}

extension SyncServer {
    /// Another process committed to `commit.account`: remembers the pushing
    /// device's own stretch first, forgets the account's head, then wakes the
    /// account's parked polls, so that device's poll sleeps through its own
    /// push wherever it was served and every other poll reads the new rows.
    public func remoteCommitted(_ commit: RemoteCommit) {
        if let own = commit.own {
            ownChanges.record(account: commit.account, device: own.device, epoch: own.epoch, from: own.from, to: own.to)
        }
        heads.forget(commit.account)
        notifier.notify(commit.account)
    }
}
