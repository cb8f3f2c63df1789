import Foundation
import NotesModel
import SQLiteKit
import SyncEngine
import SyncProtocol
import SyncServer

// Transport failures as they arrive at the engine (a reset connection, an
// untrusted certificate, a proxy's 401/403/404/502 page, a reply cut mid-body)
// and the rule they test: only a `refused` result the server gave may make
// a device settle a change as refused (docs/sync.md "When the server says no").

extension SimConfiguration {
    /// The seed's rates for transport failures, from a stream of their own so
    /// the seed's other settings are what they were before these existed.
    /// Swarm style: each kind is on in about half the runs.
    static func transportFailureRates(seed: UInt64) -> [SimFault: Double] {
        var random = SimRandom(seed: seed ^ 0x7A5E_F00D_0BAD_CE11)
        var rates: [SimFault: Double] = [:]
        for kind in [SimFault.connectionReset, .tlsFailure, .unauthorized, .forbidden, .notFound, .badGateway, .cutReply] {
            if random.chance(0.5) { rates[kind] = random.unit() * 0.08 }
        }
        return rates
    }
}

extension SimTransport {
    /// One request meeting `fault` on its way; nothing in front of the server
    /// (a proxy, a wrong URL, TLS) lets it reach the server, except a reset
    /// after sending and a cut reply.
    func arrive(_ fault: SimFault?, request: ServerRequest, push: PushRequest?) async throws(TransportError) -> (Int, Data) {
        func page(_ status: Int) -> Data { Data("<html><body><h1>\(status)</h1>a proxy says no</body></html>".utf8) }
        switch fault {
        case .connectionReset?:
            if world.random.chance(0.5) { _ = await handle(request, push: push) }
            throw .offline("connection lost (Connection reset by peer)")
        case .tlsFailure?:
            throw .untrustedCertificate("SSL certificate problem: self-signed certificate in certificate chain")
        case .unauthorized?:
            return (401, page(401))
        case .forbidden?:
            return (403, page(403))
        case .notFound?:
            return (404, page(404))
        case .badGateway?:
            return (502, page(502))
        case .cutReply?:
            let (status, body) = await handle(request, push: push)
            return (status, body.prefix(world.random.int(0...max(0, body.count - 1))))
        default:
            throw .offline("unexpected fault")
        }
    }

    /// The `failureSettlesAsRefused` breakage: an engine that takes a push
    /// failing with a 4xx or a TLS error for the server's refusal of every
    /// change in it. Nil (no breakage, or another failure): the error stands.
    func settledAsRefusedByBrokenEngine(_ request: PushRequest, after error: TransportError) -> PushResponse? {
        guard world.breakage == .failureSettlesAsRefused else { return nil }
        switch error {
        case .unauthorized, .forbidden, .notFound, .untrustedCertificate, .rejected:
            world.trace("  \(world.devices[device].name) (broken) settles a failed push as refused: \(error)")
            return PushResponse(
                results: request.changes.map { change in
                    ChangeResult(
                        changeId: change.changeId,
                        outcome: .refused(reason: RefusalReason(rawValue: "http_error"), message: error.description))
                })
        default:
            return nil
        }
    }
}

extension SimWorld {
    /// A change the server refused one device.
    struct Refusal: Hashable {
        var device: Int
        var ref: EntityRef
    }

    /// The server's own `413 payload_too_large` for a push of one change is
    /// the one whole-request answer that refuses that change.
    func noteWholeRequestRefusal(device: Int, request: PushRequest, status: Int, body: Data) {
        guard status == 413, request.changes.count == 1, let change = request.changes.first,
            let error = try? WireCoding.decoder().decode(ErrorBody.self, from: body),
            error.error.code == .payloadTooLarge
        else { return }
        refusedByServer.insert(Refusal(device: device, ref: change.ref))
    }

    /// Every refusal a device settled (its `(not synced)` copies, its undone
    /// folder moves) answers a refusal the server gave that device: a failed
    /// request is never a refusal. Text kept only in a `(not synced)` copy
    /// never reaches the other machines, so the no-lost-text check alone
    /// cannot see this.
    func checkRefusalsCameFromTheServer() throws {
        for (index, device) in devices.enumerated() {
            let db = try Connection(path: device.path, options: .init(mode: .readOnly, walJournal: false))
            let settled = try db.query("SELECT entity_kind, entity_id, reason FROM refusals") {
                ($0.string(0), $0.string(1), $0.string(2))
            }
            for (kind, id, reason) in settled {
                guard let kind = EntityKind(rawValue: kind), let uuid = UUIDText.parse(id) else { continue }
                if !refusedByServer.contains(Refusal(device: index, ref: EntityRef(kind: kind, id: uuid))) {
                    violation("\(device.name): settled \(kind) \(id.prefix(8)) as refused (\(reason)) though the server never refused it")
                }
            }
        }
    }
}
