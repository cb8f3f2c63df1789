import NotesModel
@testable import SyncEngine
import Testing
import TestSupport

/// The scheduler's intake folds reports from other threads; the loop must
/// end up with the same pending work as if it had heard each report alone,
/// in order (which is what the scheduler did when the reports changed its
/// state directly).
@Suite struct SchedulerIntakeTests {
    private enum Report {
        case localChange(at: Double, syncedEdit: Bool)
        case fileClosed
        case runRequested
    }

    /// Each report applied to the pending work on its own, in order.
    private static func applyAlone(_ report: Report, to work: inout PendingWork) {
        switch report {
        case .localChange(let time, let syncedEdit):
            work.localChangeAt = time
            if work.firstLocalChangeAt == nil { work.firstLocalChangeAt = time }
            if syncedEdit { work.syncedEditPending = true } else { work.otherChangePending = true }
        case .fileClosed:
            if work.syncedEditPending { work.closedAfterSyncedEdit = true }
        case .runRequested:
            work.runNow = true
        }
    }

    private static func post(_ report: Report, to intake: SchedulerIntake) {
        switch report {
        case .localChange(let time, let syncedEdit): intake.localChange(at: time, syncedEdit: syncedEdit)
        case .fileClosed: intake.fileClosed()
        case .runRequested: intake.requestRun()
        }
    }

    @Test func foldedReportsLeaveTheSameWorkAsReportsHeardOneByOne() {
        for seed in Seeds.list(count: 300) {
            var random = SplitMix64(seed: seed)
            let intake = SchedulerIntake()
            var folded = PendingWork()
            var alone = PendingWork()
            var time = 0.0
            for _ in 0..<random.int(1..<60) {
                // Between takes, any number of reports (a run can keep the loop away).
                let reports = random.int(0..<6)
                for _ in 0..<reports {
                    time += Double(random.int(0..<100)) / 100
                    let report = random.pick([
                        Report.localChange(at: time, syncedEdit: true), .localChange(at: time, syncedEdit: false),
                        .fileClosed, .fileClosed, .runRequested,
                    ])
                    Self.post(report, to: intake)
                    Self.applyAlone(report, to: &alone)
                }
                #expect(intake.alarm.take() == (reports > 0), "the alarm rings for every report; \(Seeds.describe(seed))")
                folded.absorb(intake.take())
                #expect(folded == alone, "\(Seeds.describe(seed))")
                if random.percent(30) {
                    // A run starts: the loop forgets what it heard.
                    folded = PendingWork()
                    alone = PendingWork()
                }
            }
        }
    }

    @Test func aCloseBeforeTheSyncedEditDoesNotSendItAtOnce() {
        let intake = SchedulerIntake()
        intake.fileClosed()
        intake.localChange(at: 1, syncedEdit: true)
        var work = PendingWork()
        work.absorb(intake.take())
        #expect(work.syncedEditPending)
        #expect(!work.closedAfterSyncedEdit)
        // A close after it, even when the loop takes the two apart, does.
        intake.fileClosed()
        work.absorb(intake.take())
        #expect(work.closedAfterSyncedEdit)
    }

    @Test func everyReportRingsTheAlarmAndATakeEmptiesTheIntake() {
        let intake = SchedulerIntake()
        #expect(!intake.alarm.isRinging)
        intake.localChange(at: 3, syncedEdit: false)
        #expect(intake.alarm.take())
        intake.fileClosed()
        #expect(intake.alarm.take())
        intake.requestRun()
        #expect(intake.alarm.take())
        let arrivals = intake.take()
        #expect(arrivals.firstChangeAt == 3 && arrivals.otherChange && arrivals.closed && arrivals.runRequested)
        #expect(intake.take() == SchedulerIntake.Arrivals())
    }
}
