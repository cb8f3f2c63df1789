import NotesModel
import Testing

@testable import SyncServer

/// The ledger only ever lets a poll skip a stretch its own device made.
@Suite struct OwnChangesLedgerTests {
    let account = AccountID(1)
    let device = DeviceID()

    @Test func aPollInsideTheDevicesStretchMovesToItsEnd() {
        let ledger = OwnChangesLedger()
        ledger.record(account: account, device: device, epoch: "e", from: 10, to: 13)
        #expect(ledger.skip(account: account, device: device, epoch: "e", after: 10, head: 13) == 13)
        #expect(ledger.skip(account: account, device: device, epoch: "e", after: 12, head: 20) == 13)
    }

    @Test(arguments: [
        (after: Int64(9), head: Int64(13), why: "the poll stands before the stretch: version 10 is not the device's"),
        (after: 13, head: 20, why: "the poll is already past it"),
        (after: 10, head: 12, why: "the feed's head is behind the stretch's end (a restored server)"),
    ])
    func nothingOutsideTheStretchIsSkipped(after: Int64, head: Int64, why: String) {
        let ledger = OwnChangesLedger()
        ledger.record(account: account, device: device, epoch: "e", from: 10, to: 13)
        #expect(ledger.skip(account: account, device: device, epoch: "e", after: after, head: head) == nil, "\(why)")
    }

    @Test func anotherDeviceAccountOrEpochSkipsNothing() {
        let ledger = OwnChangesLedger()
        ledger.record(account: account, device: device, epoch: "e", from: 10, to: 13)
        #expect(ledger.skip(account: account, device: DeviceID(), epoch: "e", after: 10, head: 13) == nil)
        #expect(ledger.skip(account: AccountID(2), device: device, epoch: "e", after: 10, head: 13) == nil)
        #expect(ledger.skip(account: account, device: device, epoch: "f", after: 10, head: 13) == nil)
    }

    @Test func backToBackPushesJoinAndAGapStartsAfresh() {
        let ledger = OwnChangesLedger()
        ledger.record(account: account, device: device, epoch: "e", from: 10, to: 13)
        ledger.record(account: account, device: device, epoch: "e", from: 13, to: 15)
        #expect(ledger.skip(account: account, device: device, epoch: "e", after: 10, head: 15) == 15)
        // Someone else wrote 16: the device's next push starts from 16, not 15.
        ledger.record(account: account, device: device, epoch: "e", from: 16, to: 17)
        #expect(ledger.skip(account: account, device: device, epoch: "e", after: 10, head: 17) == nil)
        #expect(ledger.skip(account: account, device: device, epoch: "e", after: 16, head: 17) == 17)
    }

    @Test func aPushThatAppliedNothingRecordsNothing() {
        let ledger = OwnChangesLedger()
        ledger.record(account: account, device: device, epoch: "e", from: 10, to: 10)
        #expect(ledger.skip(account: account, device: device, epoch: "e", after: 10, head: 10) == nil)
    }

    @Test func aCommitsNotificationTextCarriesTheDevicesStretchAndNothingMalformedPasses() throws {
        let own = OwnChanges(device: device, epoch: "0123456789abcdef0123456789abcdef", from: 41, to: 44)
        for commit in [RemoteCommit(account: account), RemoteCommit(account: AccountID(7), own: own)] {
            let fields = commit.payload.split(separator: ":", omittingEmptySubsequences: false)
            #expect(RemoteCommit(payloadFields: fields[...]) == commit, "\(commit.payload)")
            #expect(commit.payload.utf8.count < 200, "far below PostgreSQL's 8,000-byte payload limit")
        }
        let malformed = [
            "", "x", "7:\(device)", "7:\(device):44:41:e", "7:\(device):41:44:", "7:nodevice:41:44:e",
            "7:\(device):41:44:e:more",
        ]
        for text in malformed {
            let fields = text.split(separator: ":", omittingEmptySubsequences: false)
            #expect(RemoteCommit(payloadFields: fields[...]) == nil, "\(text)")
        }
    }
}
