import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import SyncEngine
import SyncServer
import SyncServerSQLite

/// One real server (SQLite store in a temporary directory) and devices, each
/// with its own real store and engine, talking through `InProcessTransport`.
public final class SyncWorld: Sendable {
    public let directory: TemporaryDirectory
    public let server: SyncServer
    public let serverStore: SQLiteServerStore
    public let token: String

    public struct Device: Sendable {
        public let store: NotesStore
        public let transport: InProcessTransport
        public let engine: SyncEngine

        public init(store: NotesStore, transport: InProcessTransport, engine: SyncEngine) {
            self.store = store
            self.transport = transport
            self.engine = engine
        }
    }

    public init(configuration: SyncServer.Configuration = SyncServer.Configuration()) async throws {
        directory = try TemporaryDirectory(prefix: "notesfs-sync")
        let serverStore = try SQLiteServerStore(
            path: SQLiteServerStore.databasePath(inDirectory: directory.path))
        self.serverStore = serverStore
        server = SyncServer(store: serverStore, configuration: configuration)
        // As `notesfs serve` does: polls at a known head read nothing.
        server.followCommits(of: serverStore)
        token = try await AccountManager(store: serverStore).add(name: "alice").token.text
    }

    /// A new device with an empty store.
    public func device(_ name: String, storeConfiguration: StoreConfiguration = StoreConfiguration()) throws -> Device {
        var configuration = storeConfiguration
        configuration.defaultDeviceName = name
        let store = try NotesStore(path: directory.file("\(name).sqlite"), configuration: configuration)
        let transport = InProcessTransport(server: server, token: token)
        return Device(
            store: store, transport: transport, engine: try SyncEngine(replica: store.replica, transport: transport))
    }

    public func remove() { directory.remove() }

    /// `devices`, with their stores, talking to `server` instead (a server
    /// replaced by a restored copy, say).
    public func devices(_ devices: [Device], movedTo server: SyncServer) throws -> [Device] {
        try devices.map { device in
            let transport = InProcessTransport(server: server, token: token)
            return Device(
                store: device.store, transport: transport,
                engine: try SyncEngine(replica: device.store.replica, transport: transport))
        }
    }

    /// A consistent copy of the server's database, as a backup would take it.
    public func backupServer(to name: String) throws -> String {
        let path = directory.file(name)
        let db = try Connection(path: serverStore.path, options: .init(mode: .readOnly, walJournal: false))
        try db.execute("VACUUM INTO '\(path)'")
        return path
    }
}

extension SyncWorld {
    /// Syncs every device in turn until all succeed, nothing is pending and
    /// every device holds the same notes and folders.
    public func syncToQuiet(_ devices: [Device], roundsMax: Int = 6) async throws {
        for _ in 0..<roundsMax {
            for device in devices {
                let outcome = await device.engine.sync()
                guard outcome.succeeded else { throw SyncWorldError("sync failed: \(outcome)") }
            }
            let pending = try devices.map { try $0.store.status().pendingCount }
            let snapshots = try devices.map { try Self.snapshot($0.store) }
            if pending.allSatisfy({ $0 == 0 }) && Set(snapshots).count == 1 { return }
        }
        throw SyncWorldError("devices did not converge in \(roundsMax) rounds")
    }

    /// Every live note and folder of a store, as comparable text.
    public static func snapshot(_ store: NotesStore) throws -> [String] {
        let db = try Connection(path: store.path, options: .init(mode: .readOnly, walJournal: false))
        let notes = try db.query(
            "SELECT id, title, hex(\(NotesStore.noteBodySQL(of: "n"))), folder_id FROM notes n WHERE deleted = 0 ORDER BY id"
        ) { "note \($0.string(0)) \($0.string(1)) \($0.string(3)) \($0.string(2))" }
        let folders = try db.query(
            "SELECT id, name, parent_id FROM folders WHERE deleted = 0 ORDER BY id"
        ) { "folder \($0.string(0)) \($0.string(1)) \($0.string(2))" }
        return folders + notes
    }
}

public struct SyncWorldError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
