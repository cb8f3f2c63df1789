import Foundation
import NotesModel
import SyncProtocol

extension SyncServer {
    /// A push checked and ready for the store: what its transaction runs and
    /// what its answer needs.
    struct ReadyPush: Sendable {
        let account: AccountID
        let request: PushRequest
        let prepared: [PreparedChange]
        let epoch: String
        let accountKey: String
        let now: Date
        let clientCounter: Int64
    }

    /// Decodes and checks a push (everything before its transaction). The
    /// account key is found here too, so the answer can be written
    /// wherever the commit is learned, without awaiting anything.
    func preparePush(_ request: ServerRequest, account: AccountID) async throws -> ReadyPush {
        let push = try decodePush(request.body)
        guard push.changes.count <= limits.pushChangesMax else {
            throw ServerError.tooManyChanges(
                "\(push.changes.count) changes in one push; at most \(limits.pushChangesMax)")
        }
        var changeIds = Set<ChangeID>()
        var refs = Set<EntityRef>()
        changeIds.reserveCapacity(push.changes.count)
        refs.reserveCapacity(push.changes.count)
        for change in push.changes {
            guard changeIds.insert(change.changeId).inserted else {
                throw ServerError.badRequest("change id \(change.changeId) appears twice in one push")
            }
            guard refs.insert(change.ref).inserted else {
                throw ServerError.badRequest("\(change.ref) has more than one change in one push")
            }
        }
        if let name = push.deviceName, !PushRequest.isValidDeviceName(name) {
            throw ServerError.badRequest(
                "deviceName must be 1 to \(PushRequest.deviceNameBytesMax) bytes of UTF-8 without control characters")
        }
        let prepared = try push.changes.map { change throws(ServerError) in try PreparedChange(change, limits: limits) }
        let payloadBytes = prepared.reduce(0) { total, change in
            change.refusal?.reason == .noteTooLarge ? total : total + change.body.count + change.change.payloadNameBytes
        }
        if prepared.count > 1 && payloadBytes > limits.pushPayloadBytesMax {
            throw ServerError.pushTooLarge(
                "\(payloadBytes) payload bytes in one push of several changes; at most \(limits.pushPayloadBytesMax)")
        }
        // A cursor the server could never have made is the client's bug, not a
        // restored server: 400, so the client does not start a full resync.
        if let cursor = push.cursor, cursor.epoch == nil || cursor.counter == nil {
            throw ServerError.badRequest("cursor is not a cursor this server made (expected <epoch>.<counter>)")
        }
        let epoch = try await store.epoch()
        if let cursor = push.cursor, cursor.epoch != epoch {
            // The bases of these changes may be versions from a history this
            // server lost (it was restored): the client resyncs first.
            throw ServerError.cursorGone("the cursor is from another server epoch (a restored or replaced server)")
        }
        return ReadyPush(
            account: account, request: push, prepared: prepared, epoch: epoch, accountKey: try await accountKey(account),
            // A client with no cursor has seen nothing: it stands at 0.
            now: clock.now(), clientCounter: push.cursor?.counter ?? 0)
    }

    /// Runs the push in the store and answers through `completion` once its
    /// commit is durable: on the store's writer thread when it has one (the
    /// answer is written there), else wherever the store answers.
    func submit(_ push: ReadyPush, completion: @escaping @Sendable (Result<ServerResponse, any Error>) -> Void) {
        let (device, epoch, clientCounter) = (push.request.device, push.epoch, push.clientCounter)
        // Other processes hear the stretch with the commit and skip it for this device's polls too.
        let own: @Sendable (PushProcessor.Outcome) -> OwnChanges? = { outcome in
            guard let head = outcome.caughtUp, head > clientCounter else { return nil }
            return OwnChanges(device: device, epoch: epoch, from: clientCounter, to: head)
        }
        let (prepared, now) = (push.prepared, push.now)
        store.push(
            account: push.account, ownChanges: own,
            { transaction in
                try PushProcessor.apply(prepared, in: transaction, device: device, now: now, clientCounter: clientCounter)
            }
        ) { [self] result in
            let outcome: PushProcessor.Outcome
            switch result {
            case .success(let made): outcome = made
            case .failure(let error): return completion(.failure(error))
            }
            guard let name = push.request.deviceName else {
                return completion(.success(answer(push, outcome, ownStretch: own(outcome))))
            }
            // After the changes: a push that fails changes nothing, its name included.
            Task {
                do {
                    try await store.recordDeviceName(account: push.account, device: device, name: name, at: now)
                    completion(.success(answer(push, outcome, ownStretch: own(outcome))))
                } catch {
                    completion(.failure(error))
                }
            }
        }
    }

    /// Announces a committed push (its own stretch, the wake-ups) and writes
    /// its answer.
    private func answer(_ push: ReadyPush, _ outcome: PushProcessor.Outcome, ownStretch: OwnChanges?) -> ServerResponse {
        let account = push.account
        if let own = ownStretch {
            // Before waking polls: this device's own poll sleeps through its push.
            ownChanges.record(account: account, device: own.device, epoch: own.epoch, from: own.from, to: own.to)
        }
        if outcome.tally.replayed > 0 {
            // A remembered answer: the commit it answers may never have been
            // announced (its process died first). Announced now, as a push.
            heads.forget(account)
            (store as? any CommitReporting)?.announceCommit(RemoteCommit(account: account, own: ownStretch))
        }
        if outcome.tally.applied + outcome.tally.replayed > 0 { notifier.notify(account) }
        metrics.record(outcome.tally)
        let startCursor = SyncCursor(epoch: push.epoch, counter: 0).rawValue
        let nextCursor = outcome.caughtUp.map { SyncCursor(epoch: push.epoch, counter: $0).rawValue }
        var body = Data()
        body.reserveCapacity(
            outcome.results.reduce(96 + startCursor.utf8.count + (nextCursor?.utf8.count ?? 0) + push.accountKey.utf8.count) {
                $0 + $1.count + 1
            })
        body.append(contentsOf: #"{"results":["#.utf8)
        for (index, result) in outcome.results.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(result)
        }
        // The epoch is the server's own letters, digits and dashes: no escaping.
        body.append(contentsOf: #"],"startCursor":""#.utf8)
        body.append(contentsOf: startCursor.utf8)
        if let nextCursor {
            body.append(contentsOf: #"","nextCursor":""#.utf8)
            body.append(contentsOf: nextCursor.utf8)
        }
        // The key is lowercase hex: no escaping.
        body.append(contentsOf: #"","account":""#.utf8)
        body.append(contentsOf: push.accountKey.utf8)
        body.append(contentsOf: #""}"#.utf8)
        let tally = outcome.tally
        return ServerResponse(
            status: 200, contentType: "application/json", body: body,
            logNote:
                "account=\(account) device=\(push.request.device) applied=\(tally.applied) conflict=\(tally.conflicts) "
                + "refused=\(tally.refused) replayed=\(tally.replayed)"
                + (push.request.deviceName.map { " name=" + LogText.escaped($0, limit: PushRequest.deviceNameBytesMax) }
                    ?? ""))
    }
}
