import Foundation
import NotesModel
import NotesStore
import SQLiteKit
import SyncEngine
import SyncProtocol
import SyncServer
import SyncServerSQLite

// What can happen to the server: a reopen, a restart, a backup taken or
// restored, a clock jump past retention.
extension SimWorld {
    func reopenServer() throws {
        serverStore = try SQLiteServerStore(path: serverPath, options: .init(readers: 1))
        let time = self.time
        let clock = ServerClock { Date(timeIntervalSince1970: Double(time.now + time.serverJump) / 1e9) }
        server = SyncServer(store: serverStore, configuration: serverConfiguration, clock: clock)
        server.followCommits(of: serverStore)
    }

    func restartServer() async throws {
        count(.serverRestart)
        trace("server restarts")
        await serverStore.close()
        try reopenServer()
    }

    func copyDatabase(from source: String, to target: String) throws {
        let manager = FileManager.default
        for suffix in ["", "-wal", "-shm"] {
            try? manager.removeItem(atPath: target + suffix)
            if manager.fileExists(atPath: source + suffix) {
                try manager.copyItem(atPath: source + suffix, toPath: target + suffix)
            }
        }
    }

    /// Takes a backup of the server (stopped for the copy), or puts an older
    /// backup back and starts a new epoch, as `notesfs server new-epoch` does.
    func backupOrRestoreServer() async throws {
        await serverStore.close()
        if hasBackup && random.chance(0.6) {
            count(.serverRestore)
            try copyDatabase(from: backupPath, to: serverPath)
            try reopenServer()
            epoch = try await serverStore.newEpoch(now: Date(timeIntervalSince1970: Double(time.now + time.serverJump) / 1e9))
            staleAfterRestore = Set(devices.indices)
            trace("server replaced by an older backup; new epoch")
        } else {
            try copyDatabase(from: serverPath, to: backupPath)
            hasBackup = true
            answersAtBackup = answers
            try reopenServer()
            trace("server backed up")
        }
    }

    /// Moves the server's clock past tombstone retention and purges: every
    /// cursor from before is now too old.
    func expireCursors() async throws {
        count(.cursorExpiry)
        time.jumpServer(seconds: Int64(serverConfiguration.tombstoneRetentionSeconds) + 600)
        let report = try await server.purgeExpired()
        purgeGeneration += 1
        trace("server clock jumps past retention; purged \(report.tombstones) tombstones, \(report.changeIds) change ids")
    }
}
