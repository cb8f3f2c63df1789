import Synchronization

/// Whole listings of recently listed directories, kept while the database
/// is unchanged: a warm walk (`find`, `ls -lR`, `grep -r`) lists every folder
/// again, and the join behind a listing is most of a readdir's cost.
///
/// A listing is only ever served under the same `Stamp` it was read at: the
/// connection's change count (every write of this process goes through the
/// store's one connection) and SQLite's `data_version` (any other
/// connection's commit). Entries carry sizes and times, so any change at
/// all, anywhere, makes every kept listing stale; that is cheap to notice
/// and never wrong.
final class ListingCache: Sendable {
    /// What the database looked like when a listing was read.
    struct Stamp: Equatable {
        var ownChanges: Int64
        var dataVersion: Int64
    }

    /// Directories with more entries than this are listed page by page from the database.
    static let entriesPerDirectoryMax = 4_096
    /// Entries kept in all; past it the cache starts over.
    static let entriesMax = 32_768

    private enum Listing {
        case entries([Entry])
        /// More than `entriesPerDirectoryMax`: not kept.
        case tooLarge
    }

    private struct State {
        var stamp: Stamp?
        var listings: [DirectoryRef: Listing] = [:]
        var entryCount = 0
    }

    private let state = Mutex(State())

    enum Answer {
        case entries([Entry])
        case tooLarge
        case unknown
    }

    /// The kept listing of `directory`, if it was read under `stamp`.
    func listing(of directory: DirectoryRef, at stamp: Stamp) -> Answer {
        state.withLock { state in
            guard state.stamp == stamp, let listing = state.listings[directory] else { return .unknown }
            switch listing {
            case .entries(let entries): return .entries(entries)
            case .tooLarge: return .tooLarge
            }
        }
    }

    /// Keeps the whole listing of `directory`, read under `stamp` (nil: too large to keep).
    func keep(_ entries: [Entry]?, of directory: DirectoryRef, at stamp: Stamp) {
        state.withLock { state in
            if state.stamp != stamp {
                state = State()
                state.stamp = stamp
            }
            guard let entries else {
                state.listings[directory] = .tooLarge
                return
            }
            if state.entryCount + entries.count > Self.entriesMax {
                state.listings.removeAll()
                state.entryCount = 0
            }
            state.listings[directory] = .entries(entries)
            state.entryCount += entries.count
        }
    }

    /// The entries with cookies greater than `cookie`, at most `limit`, from a
    /// listing sorted by cookie.
    static func page(of entries: [Entry], after cookie: Int64, limit: Int) -> [Entry] {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].cookie <= cookie { low = middle + 1 } else { high = middle }
        }
        return Array(entries[low..<min(entries.count, low + max(0, limit))])
    }
}
