import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import SyncServer
import Testing

/// Error cases answer with the status that tells a client what to do, and a
/// message that names the field, over a real HTTP server on loopback.
@Suite struct StatusCodeTests {
    static func pushBody(cursor: String?, baseVersion: String = "null") -> Data {
        let change = """
            {"changeId":"\(UUIDText.format(UUID()))","kind":"note","id":"\(UUIDText.format(UUID()))","op":"put",\
            "baseVersion":\(baseVersion),"note":{"title":"t","body":"b","folderId":null}}
            """
        let cursorField = cursor.map { #","cursor":"\#($0)""# } ?? ""
        return Data(#"{"device":"\#(UUIDText.format(UUID()))","changes":[\#(change)]\#(cursorField)}"#.utf8)
    }

    @Test(arguments: ["", "x", "abc", ".5", "epoch.", "epoch.-1", "ep och.3"])
    func aMalformedPushCursorIsABadRequestNamingTheCursorNotAGoneCursor(cursor: String) async throws {
        let h = try Harness(.sqlite, .http)
        let token = try await h.account()
        let reply = try await h.send("POST", Endpoint.push, token: token, body: Self.pushBody(cursor: cursor))
        #expect(reply.status == 400, "\(reply.text)")
        #expect(reply.errorCode == "bad_request")
        #expect(reply.text.contains("cursor"), "\(reply.text)")
        // Nothing was applied.
        #expect(try await h.changes(token: token).changes.isEmpty)
        await h.close()
    }

    @Test func aCursorFromAnotherEpochStillAnswersGone() async throws {
        let h = try Harness(.sqlite, .http)
        let token = try await h.account()
        let reply = try await h.send("POST", Endpoint.push, token: token, body: Self.pushBody(cursor: "elsewhere.3"))
        #expect(reply.status == 410)
        await h.close()
    }

    @Test(arguments: ["99999999999999999999", "-99999999999999999999", "1e40", "1.5", "0", "-3"])
    func anOutOfRangeBaseVersionIsReportedAsSuchNamingTheField(baseVersion: String) async throws {
        let h = try Harness(.sqlite, .http)
        let token = try await h.account()
        let reply = try await h.send(
            "POST", Endpoint.push, token: token, body: Self.pushBody(cursor: nil, baseVersion: baseVersion))
        #expect(reply.status == 400)
        #expect(reply.text.contains("baseVersion"), "\(baseVersion): \(reply.text)")
        #expect(!reply.text.contains("not valid JSON"), "\(baseVersion): \(reply.text)")
        await h.close()
    }
}

/// PostgreSQL answers `COMMIT` of an aborted transaction with success and the
/// tag ROLLBACK; a group commit must not take that for a commit.
@Suite struct PostgresCommitTests {
    @Test func aCommitThatRolledBackIsAnError() throws {
        guard let cluster = PostgresTestCluster.cluster() else { return }
        let connection = try PostgresConnection(conninfo: cluster.conninfo())
        try connection.execute("BEGIN")
        #expect(throws: PostgresError.self) { try connection.execute("SELECT 1 / 0") }
        #expect(connection.isInFailedTransaction)
        #expect(throws: PostgresError.self) { try connection.execute("COMMIT") }
        #expect(!connection.isInTransaction)
        // An ordinary commit still succeeds.
        try connection.execute("BEGIN")
        try connection.execute("SELECT 1")
        try connection.execute("COMMIT")
    }
}
