import NotesModel
import SQLiteKit

/// How long the trash keeps a note: as long as the server keeps the history
/// (`notesfs serve --history-days`, told on every changes page and kept in
/// the sync state), or `StoreConfiguration.trashRetentionNanoseconds` (30
/// days) while no server said (an offline profile, a server from before).
extension NotesStore {
    /// Version 11: `sync_state.server_history_seconds`, the server's history
    /// period as it last told it; NULL while none did.
    static let version11 = """
        ALTER TABLE sync_state ADD COLUMN server_history_seconds INTEGER;
        """

    /// The longest period a server may set (ten years): beyond it the trash
    /// keeps its notes ten years, and the arithmetic stays far from overflow.
    static let trashSecondsMax: Int64 = 10 * 365 * 86_400

    /// How long a deleted note stays in the trash, in nanoseconds.
    var trashRetentionNanoseconds: Int64 {
        let seconds = serverHistorySeconds.load(ordering: .relaxed)
        guard seconds > 0 else { return configuration.trashRetentionNanoseconds }
        return min(seconds, Self.trashSecondsMax) * 1_000_000_000
    }

    /// The stored period (0: none), read when the store opens.
    static func storedServerHistorySeconds(_ db: Connection) throws -> Int64 {
        try db.queryOne("SELECT server_history_seconds FROM sync_state WHERE id = 1") { $0.optionalInt64(0) }
            .flatMap { $0 } ?? 0
    }

    /// Keeps the server's history period (nil or not positive: the server
    /// did not say) when it differs from the one kept, so a page that says
    /// the same costs nothing. A shorter period prunes the trash soon, off
    /// this call's path.
    func rememberServerHistory(seconds: Int64?) throws(StoreError) {
        let told = max(0, seconds ?? 0)
        let kept = serverHistorySeconds.load(ordering: .relaxed)
        guard told != kept else { return }
        try write(origin: .local, checkSpace: false) { db, _ in
            try db.run("UPDATE sync_state SET server_history_seconds = ? WHERE id = 1", told > 0 ? told : nil)
        }
        serverHistorySeconds.store(told, ordering: .relaxed)
        historyPruner.schedule()
    }
}
