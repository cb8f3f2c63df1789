import Foundation
import NotesModel
import SyncEngine
import SyncProtocol
import SyncServer

/// The simulated network between one device and the real `SyncServer`:
/// requests go to `SyncServer.handle` in process, and the world decides, per
/// request, whether it is lost, answered twice, answered late, and so on.
/// Every answer the server produced is recorded, delivered or not.
///
/// `@unchecked Sendable`: used only from the world's single driving task (see `SimDevice`).
final class SimTransport: SyncTransport, @unchecked Sendable {
    unowned let world: SimWorld
    let device: Int
    /// `noIdempotency` breakage: ids already sent once, and the fresh id → original id map.
    private var sentChangeIDs = Set<ChangeID>()
    private var originalIDs: [ChangeID: ChangeID] = [:]

    init(world: SimWorld, device: Int) {
        self.world = world
        self.device = device
    }

    private func send(
        _ route: String, method: String, query: [String: String] = [:], body: Data = Data(),
        push: PushRequest? = nil
    ) async throws(TransportError) -> (Int, Data) {
        let fault = world.drawFault(device: device, route: route)
        let request = ServerRequest(
            method: method, path: route, query: query, authorization: "Bearer \(world.token)", body: body)
        if push != nil { world.maybeEditInFlight(device: device, moment: "before the server saw the push") }
        switch fault {
        case nil:
            let reply = await handle(request, push: push)
            if push != nil { world.maybeEditInFlight(device: device, moment: "before the reply arrived") }
            return reply
        case .offlineRequest?, .loseRequest?:
            throw .offline("request lost (\(fault?.rawValue ?? ""))")
        case .loseReply?:
            _ = await handle(request, push: push)
            if push != nil { world.maybeEditInFlight(device: device, moment: "after the server applied the push") }
            throw .offline("reply lost")
        case .crashAtRequest?:
            world.devices[device].crashPending = true
            if world.random.chance(0.5) { _ = await handle(request, push: push) }
            throw .offline("device crashed")
        case .duplicate?:
            _ = await handle(request, push: push)
            return await handle(request, push: push)
        case .lateReply?:
            // The request is held up in the network and reaches the server
            // later, after requests sent after it; its answer goes nowhere.
            if let push {
                world.delayedPushes.append((device: device, request: request, push: push, originals: originalIDs))
            }
            throw .offline("no answer yet (the request is delayed)")
        case .serverError?:
            return (500, Data(#"{"error":{"code":"internal","message":"injected"}}"#.utf8))
        case .malformedReply?:
            _ = await handle(request, push: push)
            return (200, Data("{\"results\": [".utf8))
        default:
            return try await arrive(fault, request: request, push: push)
        }
    }

    /// One delivery to the server; push answers are recorded for the
    /// idempotency and refusal invariants.
    func handle(_ request: ServerRequest, push: PushRequest?) async -> (Int, Data) {
        await world.deliver(request, push: push, device: device, originals: originalIDs)
    }

    func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
        var sent = request
        if world.breakage == .noIdempotency {
            // A server that skips the idempotency check, seen from the client:
            // every retry arrives as a change it has never seen.
            for index in sent.changes.indices {
                let original = sent.changes[index].changeId
                if sentChangeIDs.contains(original) {
                    let fresh = ChangeID(world.uuids.next())
                    originalIDs[fresh] = original
                    sent.changes[index].changeId = fresh
                } else {
                    sentChangeIDs.insert(original)
                }
            }
        }
        let staleBases = world.staleAfterRestore.contains(device) && sent.changes.contains { $0.baseVersion != nil }
        let status: Int, body: Data
        do {
            (status, body) = try await send(
                Endpoint.push, method: "POST", body: TransportDecoding.encode(sent), push: sent)
        } catch {
            if let refused = settledAsRefusedByBrokenEngine(request, after: error) { return refused }
            throw error
        }
        // A push the server turned away with 410 applied nothing.
        if staleBases && status != 410 { world.staleBasePushes += 1 }
        var response = try TransportDecoding.decode(PushResponse.self, status: status, body: body)
        for index in response.results.indices {
            if let original = originalIDs[response.results[index].changeId] {
                response.results[index].changeId = original
            }
        }
        return response
    }

    func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
        if waitSeconds > 0 { return try await longPoll(since: since, limit: limit, waitSeconds: waitSeconds) }
        var query = [Endpoint.Query.limit: String(limit), Endpoint.Query.wait: String(waitSeconds)]
        if let since { query[Endpoint.Query.since] = since.rawValue }
        let (status, body) = try await send(Endpoint.changes, method: "GET", query: query)
        let page = try TransportDecoding.decode(ChangesPage.self, status: status, body: body)
        world.trace("  \(world.devices[device].name) pulled \(page.changes.map { "\($0.id.uuidString.prefix(8))@\($0.version)\($0.deleted ? "†" : "")" }) next \(page.nextCursor.counter.map(String.init) ?? "?")")
        return page
    }

    func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage {
        var query = [Endpoint.Query.limit: String(limit)]
        if let after { query[Endpoint.Query.after] = after }
        let (status, body) = try await send(Endpoint.index, method: "GET", query: query)
        let page = try TransportDecoding.decode(IndexPage.self, status: status, body: body)
        if page.epoch == world.epoch { world.staleAfterRestore.remove(device) }
        world.trace("  \(world.devices[device].name) index \(page.entries.map { "\($0.id.uuidString.prefix(8))@\($0.version)" })")
        return page
    }

    func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse {
        let (status, body) = try await send(Endpoint.fetch, method: "POST", body: TransportDecoding.encode(request))
        return try TransportDecoding.decode(FetchResponse.self, status: status, body: body)
    }
}
