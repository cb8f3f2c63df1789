import Synchronization
import Testing

@testable import SyncServer

/// The memory of each account's head only ever vouches for a value no
/// reported commit can have passed.
@Suite struct FeedHeadsTests {
    let account = AccountID(1)
    let other = AccountID(2)

    func following(trustSeconds: Double = 60, hears: Bool = true) -> FeedHeads {
        let heads = FeedHeads(trustSeconds: trustSeconds)
        heads.follow { hears }
        return heads
    }

    @Test func aHeadReadWithNothingReportedMeanwhileIsKnown() {
        let heads = following()
        heads.record(heads.begin(account), counter: 7, epoch: "e")
        #expect(heads.known(account, epoch: "e") == 7)
        #expect(heads.known(other, epoch: "e") == nil)
    }

    @Test func nothingIsKeptBeforeTheStoreReportsCommits() {
        let heads = FeedHeads(trustSeconds: 60)
        #expect(heads.begin(account) == nil)
        heads.record(nil, counter: 7, epoch: "e")
        #expect(heads.known(account, epoch: "e") == nil)
        #expect(!heads.isFollowing)
    }

    @Test func aReadThatRacedAReportedCommitKeepsNothing() {
        let heads = following()
        let stamp = heads.begin(account)
        // The commit lands after the read's snapshot and is reported before the read returns.
        heads.forget(account)
        heads.record(stamp, counter: 7, epoch: "e")
        #expect(heads.known(account, epoch: "e") == nil)
        // The next read keeps what it saw.
        heads.record(heads.begin(account), counter: 8, epoch: "e")
        #expect(heads.known(account, epoch: "e") == 8)
    }

    @Test func aCommitOrAMissedCommitForgetsTheHead() {
        let heads = following()
        heads.record(heads.begin(account), counter: 7, epoch: "e")
        heads.record(heads.begin(other), counter: 3, epoch: "e")
        heads.forget(account)
        #expect(heads.known(account, epoch: "e") == nil)
        #expect(heads.known(other, epoch: "e") == 3)
        let stamp = heads.begin(other)
        heads.forgetAll()
        #expect(heads.known(other, epoch: "e") == nil)
        // A read that began before everything was forgotten keeps nothing either.
        heads.record(stamp, counter: 3, epoch: "e")
        #expect(heads.known(other, epoch: "e") == nil)
    }

    @Test func anOlderReadNeverStepsTheHeadBack() {
        let heads = following()
        let early = heads.begin(account)
        heads.record(heads.begin(account), counter: 9, epoch: "e")
        heads.record(early, counter: 8, epoch: "e")
        #expect(heads.known(account, epoch: "e") == 9)
    }

    @Test func aHeadIsKnownOnlyInItsEpochAndWhileTheStoreHearsEverything() {
        let hearing = Atomic<Bool>(true)
        let heads = FeedHeads(trustSeconds: 60)
        heads.follow { hearing.load(ordering: .relaxed) }
        heads.record(heads.begin(account), counter: 7, epoch: "e")
        #expect(heads.known(account, epoch: "f") == nil)
        hearing.store(false, ordering: .relaxed)
        #expect(heads.known(account, epoch: "e") == nil)
        hearing.store(true, ordering: .relaxed)
        #expect(heads.known(account, epoch: "e") == 7)
    }

    @Test func aHeadIsTrustedOnlyForItsPeriod() {
        let heads = following(trustSeconds: 30)
        let read = ContinuousClock.now
        heads.record(heads.begin(account), counter: 7, epoch: "e", now: read)
        #expect(heads.known(account, epoch: "e", now: read + .seconds(29)) == 7)
        #expect(heads.known(account, epoch: "e", now: read + .seconds(30)) == nil)
        // A read renews it.
        heads.record(heads.begin(account), counter: 7, epoch: "e", now: read + .seconds(31))
        #expect(heads.known(account, epoch: "e", now: read + .seconds(59)) == 7)
    }
}
