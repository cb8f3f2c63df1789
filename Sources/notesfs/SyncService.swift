import Foundation
import NotesFS
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

    /// Binds the store to the profile's server and account (refusing another
    /// account), sets the device name; everything that can fail clearly fails
    /// here, before the mount reports ready.
    static func prepare(location: DataLocation, store: NotesStore, log: MountLog) throws -> (SyncProfile, HTTPSyncTransport)? {
        guard let profile = try SyncProfile.load(location) else { return nil }
        let url = try profile.serverURL()
        let token = try profile.token()
        do {
            try store.bindServer(url: url.absoluteString, accountID: SyncProfile.accountKey(token))
        } catch {
            // (A `catch .syncMismatch(let reason)` clause here crashes Swift
            // 6.3.1's ownership verifier; the switch compiles.)
            guard case .syncMismatch(let reason) = error else { throw error }
            // The token file now holds another account's token. The notes stay
            // reachable; sync waits for a rebind (status shows why).
            log.warning("sync is off: \(reason)")
            try store.recordSyncRun(succeeded: false, error: "sync is off: \(reason)")
            return nil
        }
        let caFile = try profile.checkedCAFile()
        if let name = profile.deviceName, !name.isEmpty, try store.device().name != name {
            try store.setDeviceName(name)
        }
        log.info(
            "sync: \(url.absoluteString) as device '\(try store.device().name)'"
                + (caFile.map { " trusting the certificates in \($0)" } ?? ""))
        return (
            profile,
            HTTPSyncTransport(baseURL: url, token: token.text, device: try store.device().id, caFile: caFile)
        )
    }

    init(location: DataLocation, store: NotesStore, transport: HTTPSyncTransport, mount: NotesMount, log: MountLog)
        throws
    {
        self.transport = transport
        self.log = log
        let engine = try SyncEngine(store: store, transport: transport)
        let scheduler = SyncScheduler(
            engine: engine, store: store, transport: transport, log: { log.info($0) })
        self.scheduler = scheduler
        socket = try SyncControlSocket(
            path: SyncControlSocket.path(location), scheduler: scheduler, transport: transport, log: log)
        mount.hooks.onFileClosed { scheduler.fileClosed() }
        mount.hooks.onStatus { scheduler.live }
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
