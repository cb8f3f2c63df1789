import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import SyncServerSQLite
import Synchronization
import TestSupport
import Testing

/// A request whose token was checked before its body was read is not looked
/// up again by its handler, for at most `checkedCredentialsTrustSeconds`
/// and only for the same header. The store is real; the token is revoked in
/// it between the check and the handler, so only a trusted check can pass.
/// The server's clock stands still unless a test moves it, so how long the
/// machine takes changes nothing.
@Suite struct CheckedCredentialsTests {
    /// A clock that moves only when told.
    final class StillClock: Sendable {
        private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func advance(seconds: Double) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
        var clock: ServerClock { ServerClock { [self] in now.withLock { $0 } } }
    }

    struct Serving {
        let directory: TemporaryDirectory
        let server: SyncServer
        let clock: StillClock
        let token: String

        init() async throws {
            directory = try TemporaryDirectory()
            clock = StillClock()
            let store = try SQLiteServerStore(path: SQLiteServerStore.databasePath(inDirectory: directory.path))
            server = SyncServer(store: store, clock: clock.clock)
            token = try await AccountManager(store: store).add(name: "ada").token.text
        }

        /// Checks the token, then revokes the account, as a revocation
        /// landing while the body is on its way.
        func checkThenRevoke() async throws -> CheckedCredentials {
            guard case .live(let checked) = await server.checkCredentials(authorization: "Bearer \(token)") else {
                throw HarnessError("a live token was refused")
            }
            try await AccountManager(store: server.store).revoke(name: "ada")
            return checked
        }

        func push(authorization: String, checked: CheckedCredentials?) async throws -> ServerResponse {
            let body = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note()]))
            return await server.handle(
                ServerRequest(
                    method: "POST", path: Endpoint.push, authorization: authorization, body: body,
                    checkedCredentials: checked))
        }
    }

    @Test func theHandlerTrustsAFreshCheckOfTheSameHeader() async throws {
        let serving = try await Serving()
        defer { serving.directory.remove() }
        let checked = try await serving.checkThenRevoke()
        let answer = try await serving.push(authorization: "Bearer \(serving.token)", checked: checked)
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
    }

    @Test func aCheckOlderThanTheTrustIsLookedUpAgain() async throws {
        let serving = try await Serving()
        defer { serving.directory.remove() }
        let checked = try await serving.checkThenRevoke()
        serving.clock.advance(seconds: SyncServer.checkedCredentialsTrustSeconds + 0.5)
        let answer = try await serving.push(authorization: "Bearer \(serving.token)", checked: checked)
        #expect(answer.status == 401)
    }

    @Test func aCheckOfAnotherHeaderIsNotTrusted() async throws {
        let serving = try await Serving()
        defer { serving.directory.remove() }
        let checked = try await serving.checkThenRevoke()
        let other = try await AccountManager(store: serving.server.store).add(name: "bob").token.text
        // Bob's live token with Ada's check: the handler looks Bob's up and
        // pushes into Bob's account, never Ada's.
        let answer = try await serving.push(authorization: "Bearer \(other)", checked: checked)
        #expect(answer.status == 200)
        let pushed = try WireCoding.decoder().decode(PushResponse.self, from: answer.body)
        let bobsKey = try await serving.push(authorization: "Bearer \(other)", checked: nil)
        #expect(pushed.account == (try WireCoding.decoder().decode(PushResponse.self, from: bobsKey.body)).account)
        // And a revoked token with no check is refused.
        #expect(try await serving.push(authorization: "Bearer \(serving.token)", checked: nil).status == 401)
    }
}
