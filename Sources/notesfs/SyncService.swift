import Foundation
import FuseKit
import NotesFS
import NotesModel
import NotesStore
import SyncEngine
import SyncServer

/// The sync engine attached to a running mount: transport, engine, scheduler
/// and the control socket `notesfs sync` talks to.
final class SyncService: Sendable {
    let scheduler: SyncScheduler
    let transport: HTTPSyncTransport
    let socket: SyncControlSocket
    let log: MountLog

    /// Records the profile's server in the store and sets the device name;
    /// everything that can fail clearly fails here, before the mount reports
    /// ready. Which account the token syncs as is settled by the engine at
    /// its first contact with the server (an offline mount never waits for
    /// it): another account's token blocks sync, not the mount.
    static func prepare(location: DataLocation, store: NotesStore, log: MountLog) throws -> (
        profile: SyncProfile, transport: HTTPSyncTransport, tokenID: String
    )? {
        guard let profile = try SyncProfile.load(location) else { return nil }
        let url = try profile.serverURL()
        let token = try profile.token()
        try store.admin.bindServer(url: url.absoluteString)
        let caFile = try profile.checkedCAFile()
        if let name = profile.deviceName, !name.isEmpty, try store.admin.device().name != name {
            try store.admin.setDeviceName(name)
        }
        log.info(
            "sync: \(url.absoluteString) as device '\(try store.admin.device().name)' with token \(token.id)"
                + (caFile.map { " trusting the certificates in \($0)" } ?? ""))
        return (
            profile,
            HTTPSyncTransport(
                baseURL: url, token: token.text, device: try store.admin.device().id,
                deviceName: try store.admin.device().name, caFile: caFile),
            token.id
        )
    }

    init(
        location: DataLocation, store: NotesStore, transport: HTTPSyncTransport, tokenID: String, mount: NotesMount,
        log: MountLog
    ) throws {
        self.transport = transport
        self.log = log
        let engine = try SyncEngine(replica: store.replica, transport: transport, tokenID: tokenID)
        let scheduler = SyncScheduler(
            engine: engine, replica: store.replica, transport: transport, log: { log.info($0) })
        self.scheduler = scheduler
        socket = try SyncControlSocket(
            path: SyncControlSocket.path(location), scheduler: scheduler, transport: transport, log: log)
        mount.hooks.onFileClosed { scheduler.fileClosed() }
        mount.hooks.onStatus { scheduler.live }
        mount.hooks.onMomentFetch { at in
            let (items, keptSince) = try await transport.momentItems(at: at)
            let texts = ServerMomentTexts(
                one: { id, version in try await transport.momentText(of: NoteID(id), version: version) },
                all: { receive in
                    try await transport.forEachMomentText(at: at) { page in
                        receive(page.map { ServerMomentTexts.Text(id: $0.id.uuid, version: $0.version, text: $0.text) })
                    }
                })
            return ServerMoment(items: items, keptSince: keptSince, texts: texts)
        }
    }

    func start() {
        socket.start()
        let scheduler = scheduler
        Task { await scheduler.start() }
    }

    /// Stops the scheduler and the socket (waits at most a few seconds).
    func stop() {
        socket.stop()
        transport.cancelAll()
        let done = DispatchSemaphore(value: 0)
        let scheduler = scheduler
        Task {
            await scheduler.stop()
            done.signal()
        }
        if done.wait(timeout: .now() + 10) == .timedOut {
            log.warning("sync: a run did not finish within 10 s of unmounting; its changes are sent on the next mount")
        }
    }
}
