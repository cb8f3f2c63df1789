import Foundation
import NotesModel
@testable import NotesStore
import SyncEngine
import SyncProtocol
import SyncServer
import Synchronization
import TestSupport
import Testing

/// Device names through the real server on loopback: a push tells the
/// server the device's name, and another machine's history listing names
/// it; a server from before names still takes the pushes.
@Suite(.serialized) struct DeviceNameTests {
    typealias LiveServer = HTTPTransportTests.LiveServer

    @Test func anotherMachinesVersionsCarryTheNameItToldLastThroughTheHTTPClient() async throws {
        let server = try await LiveServer()
        defer { server.stop() }
        let laptop = try server.device("laptop"), phone = try server.device("phone")
        let id = try laptop.store.createNote(in: .root, title: "plan.md", body: Data("one\n".utf8))
        #expect(await laptop.engine.sync() == .succeeded)
        #expect(await phone.engine.sync() == .succeeded)
        try phone.store.replaceBody(of: id, with: Data("one\ntwo\n".utf8))
        #expect(await phone.engine.sync() == .succeeded)
        #expect(phone.transport.deviceNameOffer?.told == true)

        var versions = try await laptop.transport.allVersions(of: .note(id)).items
        #expect(versions.map(\.device) == [try phone.store.device().id, try laptop.store.device().id])
        #expect(versions.map(\.deviceName) == ["phone", "laptop"])

        // A later session of the phone under another name: its older version shows it too.
        let renamed = try server.device("phone", newName: "phone (work)")
        try renamed.store.replaceBody(of: id, with: Data("one\ntwo\nthree\n".utf8))
        #expect(await renamed.engine.sync() == .succeeded)
        versions = try await laptop.transport.allVersions(of: .note(id)).items
        #expect(versions.map(\.deviceName) == ["phone (work)", "phone (work)", "laptop"])
    }

    /// The real server, answering a push that carries `deviceName` as a
    /// server from before names did: its strict decoding refuses the field
    /// with a 400 that changes nothing.
    final class ServerBeforeNames: Sendable {
        let transport: InProcessTransport
        let refusedNames = Mutex(0)
        init(_ transport: InProcessTransport) { self.transport = transport }

        func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
            if request.deviceName != nil {
                refusedNames.withLock { $0 += 1 }
                throw .rejected(status: 400, code: "bad_request", message: "deviceName: unknown field 'deviceName'")
            }
            return try await transport.push(request)
        }
    }

    @Test func aServerFromBeforeNamesTakesThePushAgainWithoutTheNameAndIsNotAskedAgain() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let device = try world.device("laptop")
        let old = ServerBeforeNames(device.transport)
        let offer = try #require(DeviceNameOffer(name: "laptop"))
        let deviceID = try device.store.device().id
        func push(_ id: NoteID, base: Int64?) async throws(TransportError) -> PushResponse {
            let change = Change.putNote(
                id, NotePayload(title: "n.md", bodyBytes: Data("n\n".utf8), folderId: nil), baseVersion: base)
            return try await offer.push(PushRequest(device: deviceID, changes: [change])) {
                request throws(TransportError) in try await old.push(request)
            }
        }
        let id = NoteID()
        let first = try await push(id, base: nil)
        #expect(first.results.map(\.changeId).count == 1)
        let second = try await push(id, base: 1)
        #expect(second.results.count == 1)
        #expect(old.refusedNames.withLock { $0 } == 1, "asked once, then never again")
        #expect(!offer.told)

        // Another 400 (a malformed change) is not taken for a server from before names.
        let fresh = try #require(DeviceNameOffer(name: "phone"))
        do {
            _ = try await fresh.push(PushRequest(device: DeviceID(), changes: [])) { _ throws(TransportError) in
                throw .rejected(status: 400, code: "bad_request", message: "changes[0].baseVersion: expected Int64")
            }
            Issue.record("the 400 was swallowed")
        } catch {
            #expect(error == .rejected(status: 400, code: "bad_request", message: "changes[0].baseVersion: expected Int64"))
        }
        #expect(!fresh.told)
    }

    @Test func aLogNamesMachinesByNameWithTheirDigitsWhenNamesClashAndShowsNamesEscaped() {
        let this = DeviceID(), phone = DeviceID(), twin = DeviceID(), quiet = DeviceID(), odd = DeviceID()
        func version(_ device: DeviceID?, _ name: String?) -> VersionSummary {
            VersionSummary(
                version: 1, changeId: ChangeID(), time: Date(), device: device, deviceName: name, deleted: false, size: 0,
                name: "n.md", parentId: nil)
        }
        let labels = DeviceLabels(
            versions: [
                version(this, "laptop"), version(phone, "phone"), version(twin, "laptop"), version(quiet, nil),
                version(odd, "evil\u{1B}[2J\n\u{202E}name\\"), version(nil, nil),
            ], this: (this, "laptop"))
        #expect(labels.label(this) == "this machine")
        #expect(labels.label(phone) == "phone")
        #expect(labels.label(twin) == "laptop (\(twin.description.suffix(8)))", "this machine is a laptop too")
        #expect(labels.label(quiet) == "device \(quiet.description.suffix(8))")
        #expect(labels.label(odd) == "evil\\u{1b}[2J\\u{a}\\u{202e}name\\\\")
        #expect(labels.label(nil) == "unknown device")
    }

    @Test func aLongNameIsCutAtACharacterBoundaryControlCharactersDropAndAnEmptyOneIsNotSent() {
        #expect(DeviceNameOffer(name: "") == nil)
        let long = DeviceNameOffer(name: String(repeating: "é", count: 40))
        #expect(long?.name == String(repeating: "é", count: 32))
        #expect(DeviceNameOffer(name: "lap\u{0}top\n\u{1B}")?.name == "laptop", "control characters never travel")
        #expect(DeviceNameOffer(name: "\n\t") == nil)
    }
}
