import Foundation
import NotesModel
import NotesStore
import SQLiteKit
import SyncProtocol
import SyncServer
import SyncServerSQLite

// Operator actions: a server put back from a backup without
// `notesfs server new-epoch` (the server notices by its counter mark), a
// fresh empty server with a new account that every machine rebinds to, and
// a server moved to another URL (every machine rebinds to the same data).
extension SimWorld {
    /// How often a step is an operator action; drawn from its own generator
    /// so the other draws of a seed stay as they were.
    var operatorRate: Double {
        var draw = SimRandom(seed: seed ^ 0x0BE7_A70B)
        return draw.int(1...2) == 1 ? draw.unit() * 0.08 : 0
    }

    var counterMark: CounterMarkKeeper {
        CounterMarkKeeper(store: serverStore, mark: CounterMark(path: CounterMark.path(besideDatabase: serverPath)))
    }

    func performOperatorAction() async throws {
        await deliverDelayedPushes()
        switch random.int(0...9) {
        case 0...5: try await hasBackup && random.chance(0.6) ? restoreWithoutNewEpoch() : takeBackup()
        case 6...7: try await rebindEveryDevice(to: "moved")
        default: try await replaceWithFreshServer()
        }
    }

    /// The operator copies the server's database (stopped for the copy).
    private func takeBackup() async throws {
        await serverStore.close()
        let manager = FileManager.default
        for suffix in ["", "-wal", "-shm"] {
            try? manager.removeItem(atPath: backupPath + suffix)
            if manager.fileExists(atPath: serverPath + suffix) {
                try manager.copyItem(atPath: serverPath + suffix, toPath: backupPath + suffix)
            }
        }
        hasBackup = true
        answersAtBackup = answers
        try reopenServerStore()
        trace("server backed up by the operator")
    }

    /// The server stops cleanly (recording its counter mark), an older copy of
    /// its database is put back, and nobody runs new-epoch: the server must
    /// notice by itself, and no client may delete what it lacks.
    private func restoreWithoutNewEpoch() async throws {
        count(.restoreWithoutEpoch)
        try await counterMark.record()
        await serverStore.close()
        let manager = FileManager.default
        for suffix in ["", "-wal", "-shm"] {
            try? manager.removeItem(atPath: serverPath + suffix)
            if manager.fileExists(atPath: backupPath + suffix) {
                try manager.copyItem(atPath: backupPath + suffix, toPath: serverPath + suffix)
            }
        }
        try reopenServerStore()
        let now = Date(timeIntervalSince1970: Double(time.now + time.serverJump) / 1e9)
        let noticed = try await counterMark.startNewEpochIfRestored(now: now)
        epoch = try await serverStore.epoch()
        // The change ids the server answered after the backup are gone with
        // it; a retry of one of them is a first delivery again.
        answers = answersAtBackup
        staleAfterRestore = Set(devices.indices)
        trace("server put back from a backup without new-epoch; \(noticed == nil ? "not noticed" : "noticed: new epoch")")
        if breakage == .resyncDeletesWhatTheServerLacks { try deleteWhatTheServerLacks() }
    }

    /// The server is lost; a fresh one with a new account takes its place and
    /// every machine runs `notesfs sync --rebind` to it.
    private func replaceWithFreshServer() async throws {
        count(.freshServer)
        await serverStore.close()
        for suffix in ["", "-wal", "-shm", ".counter-mark"] { try? FileManager.default.removeItem(atPath: serverPath + suffix) }
        try reopenServerStore()
        let added = try await AccountManager(store: serverStore, clock: serverClock).add(name: "sim-again")
        account = added.account
        token = added.token.text
        epoch = try await serverStore.epoch()
        hasBackup = false
        purgeGeneration += 1
        trace("server replaced by a fresh one with a new account")
        try await rebindEveryDevice(to: "fresh")
    }

    /// Every machine rebinds (a moved URL keeps the server's data: every note
    /// meets its own id there and merges).
    private func rebindEveryDevice(to place: String) async throws {
        count(.rebind)
        for device in devices {
            device.dirtyTokens = try device.tokensInDirtyNotes()
            let report = try device.store.admin.rebindServer(url: "sim://\(place)/\(step)", tokenID: nil)
            trace("\(device.name) rebinds to the \(place) server: \(report.notes) notes, \(report.folders) folders queued")
        }
    }

    private var serverClock: ServerClock {
        let time = self.time
        return ServerClock { Date(timeIntervalSince1970: Double(time.now + time.serverJump) / 1e9) }
    }

    private func reopenServerStore() throws {
        serverStore = try SQLiteServerStore(path: serverPath, options: .init(readers: 1))
        server = SyncServer(store: serverStore, configuration: serverConfiguration, clock: serverClock)
        server.followCommits(of: serverStore)
    }

    /// The broken variant: each machine deletes the clean notes the restored
    /// server lacks, as a resync did before only a server tombstone could delete.
    private func deleteWhatTheServerLacks() throws {
        let serverDB = try openServerReader()
        let present = Set(
            try serverDB.query(
                "SELECT id FROM entities WHERE account_id = ? AND kind = 'note' AND deleted = 0", account.rawValue
            ) { $0.string(0) })
        for device in devices {
            let db = try Connection(path: device.path)
            try db.transaction {
                let absent = try db.query(
                    "SELECT id FROM notes WHERE deleted = 0 AND server_version IS NOT NULL AND local_rev = synced_rev"
                ) { $0.string(0) }.filter { !present.contains($0) }
                for id in absent {
                    try db.run("DELETE FROM outbox WHERE entity_kind = 'note' AND entity_id = ?", id)
                    try db.run("DELETE FROM names WHERE entry_kind = 'note' AND entry_id = ?", id)
                    try db.run("DELETE FROM notes WHERE id = ?", id)
                }
                trace("\(device.name) (broken) deleted \(absent.count) notes the restored server lacks")
            }
        }
    }
}
