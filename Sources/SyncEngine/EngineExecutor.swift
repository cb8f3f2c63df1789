import Dispatch

/// Runs one actor's jobs in order on a dispatch queue of its own. The sync
/// engine calls the store synchronously, and a store call waits for SQLite
/// and sometimes `fsync`: on Swift's cooperative pool (one thread per core)
/// that wait would hold a thread every other task needs.
final class EngineExecutor: SerialExecutor {
    private let queue: DispatchQueue
    private let marker = DispatchSpecificKey<Bool>()

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .utility)
        queue.setSpecific(key: marker, value: true)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// Whether the calling code runs on this executor's queue.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: marker) == true }
}
