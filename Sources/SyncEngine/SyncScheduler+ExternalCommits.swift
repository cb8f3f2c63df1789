import Foundation
import NotesStore

// Every committed change wakes the engine, whatever process made it
// (docs/sync.md). The store tells this process's observers about its own
// commits; a commit by another process (`notesfs import` or `restore` while
// mounted, any other tool on the database) reaches no observer. SQLite's
// `PRAGMA data_version` on the store's own connection changes exactly when
// another connection has committed, so a short timer that reads it notices
// those commits within a tick, at the cost of one tiny query per tick.
extension SyncScheduler {
    /// Watches for commits by other processes until cancelled; each one
    /// counts as a local change (it wakes the push after the debounce).
    /// A store that cannot be read is asked again at the next tick.
    nonisolated func watchExternalCommits(everySeconds interval: Double) async {
        var last = try? await replica.externalChangeCounter()
        while !Task.isCancelled {
            do {
                try await clock.sleep(seconds: interval)
            } catch {
                return
            }
            guard let counter = try? await replica.externalChangeCounter() else { continue }
            defer { last = counter }
            guard let previous = last, previous != counter else { continue }
            log("sync: another process changed the notes database; syncing")
            var commit = StoreCommit(origin: .local)
            // Which rows changed is unknown: wait out the debounce as for a new
            // note (an import commits note by note, so one push carries many).
            commit.outboxChanged = true
            noticed(commit)
        }
    }
}
