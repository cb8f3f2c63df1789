import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Testing

/// The wire types on their own.
@Suite struct ProtocolTests {
    @Test(arguments: [
        Data("plain text\n".utf8), Data(), Data([0xFF, 0x00, 0x10]), Data("\u{1}\u{2}\u{3}\u{4}".utf8),
        Data("héllo ∕ ␀".utf8),
    ])
    func bodiesRoundTripThroughTheirWireForm(bytes: Data) throws {
        let payload = NotePayload(title: "t", bodyBytes: bytes, folderId: nil)
        let json = try WireCoding.encoder().encode(payload)
        let decoded = try WireCoding.decoder().decode(NotePayload.self, from: json)
        #expect(decoded.bodyBytes() == bytes)
        #expect(decoded.bodyByteCount == bytes.count)
    }

    @Test func invalidUTF8AndControlHeavyTextTravelAsBase64() {
        #expect(WireBody.encode(Data([0xC3, 0x28])).encoding == .base64)
        #expect(WireBody.encode(Data(repeating: 1, count: 30)).encoding == .base64)
        #expect(WireBody.encode(Data("ordinary\n".utf8)).encoding == nil)
    }

    @Test func aChangeEncodesLowercaseIdsAndExplicitNulls() throws {
        let id = NoteID()
        let change = Change.putNote(id, NotePayload(title: "a", body: "b", folderId: nil), baseVersion: nil)
        let text = String(decoding: try WireCoding.encoder().encode(change), as: UTF8.self)
        #expect(text.contains(#""id":"\#(id.description)""#))
        #expect(text.contains(#""baseVersion":null"#))
        #expect(text.contains(#""folderId":null"#))
        #expect(!text.contains("bodyEncoding"))
        #expect(try WireCoding.decoder().decode(Change.self, from: Data(text.utf8)) == change)
    }

    @Test func resultsRoundTripInEveryShape() throws {
        let current = EntityVersion(kind: .folder, id: UUID(), version: 3, changeId: ChangeID(), deleted: false, folder: FolderPayload(name: "W", parentId: nil))
        let results = [
            ChangeResult(changeId: ChangeID(), outcome: .applied(version: 9)),
            ChangeResult(changeId: ChangeID(), outcome: .conflict(current: current)),
            ChangeResult(changeId: ChangeID(), outcome: .conflict(current: nil)),
            ChangeResult(changeId: ChangeID(), outcome: .refused(reason: .folderCycle, message: "no")),
        ]
        let data = try WireCoding.encoder().encode(PushResponse(results: results))
        #expect(String(decoding: data, as: UTF8.self).contains(#""current":null"#))
        #expect(try WireCoding.decoder().decode(PushResponse.self, from: data).results == results)
    }

    @Test func cursorsCarryEpochAndCounter() {
        let cursor = SyncCursor(epoch: "abc123", counter: 42)
        #expect(cursor.epoch == "abc123")
        #expect(cursor.counter == 42)
        #expect(SyncCursor(rawValue: "abc.-1").counter == nil)
        #expect(SyncCursor(rawValue: "nodot").epoch == nil)
        #expect(SyncCursor(rawValue: "a b.1").epoch == nil)
    }

    @Test func tokensParseAndCompareInConstantTime() {
        let token = AccessToken.generate()
        #expect(AccessToken(text: token.text) == token)
        #expect(AccessToken.fromAuthorization("Bearer \(token.text)") == token)
        #expect(AccessToken.fromAuthorization("Basic \(token.text)") == nil)
        #expect(AccessToken(text: token.text + "x") == nil)
        #expect(AccessToken.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!AccessToken.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!AccessToken.constantTimeEqual([1, 2], [1, 2, 3]))
    }

    @Test func limitsLetTheLargestNoteThroughAsBase64() {
        let limits = ProtocolLimits()
        #expect(limits.requestBodyBytesMax >= (limits.noteBytesMax + 2) / 3 * 4 + 1_000)
    }
}
