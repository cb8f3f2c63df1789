import Foundation
import Synchronization
import SyncServer

/// The log lines any client can cause without a live token: answers 401,
/// 404 and 405 and the refusals made before the token is known,
/// connections that end before an answer, libmicrohttpd's own messages
/// (connection limits), and connections closed at accept. Of each interval's
/// lines the first `linesPerInterval` are written as they come; the rest are
/// only counted, and once the interval is over one line gives the counts and
/// the address most of them came from. A flood of bad requests therefore
/// costs the log a few lines every interval, and each left-out line costs
/// the server a counter, not a formatted write.
final class RefusalLog: Sendable {
    /// What a counted line was about.
    enum Kind: Hashable, Sendable, CustomStringConvertible {
        /// A request answered with this status.
        case answered(Int)
        /// A connection closed before its request was answered.
        case endedEarly
        /// A message of libmicrohttpd's (most often: a connection limit was reached).
        case libmicrohttpd
        /// A connection closed at accept, over its address's new-connection rate.
        case closedAtAccept

        var description: String {
            switch self {
            case .answered(let status): "\(status) answers"
            case .endedEarly: "requests ended before an answer"
            case .libmicrohttpd: "libmicrohttpd messages"
            case .closedAtAccept: "connections closed at accept (new-connection rate)"
            }
        }
    }

    private struct Interval {
        var written = 0
        var leftOut: [Kind: Int] = [:]
        var byAddress: [ClientAddress: Int] = [:]
    }

    let linesPerInterval: Int
    let intervalSeconds: Int
    /// Addresses counted per interval at most (the summary names the top one).
    private static let addressesMax = 4_096
    private let logger: any ServerLogger
    private let interval = Mutex(Interval())
    private let reporter = Mutex<Task<Void, Never>?>(nil)

    init(logger: any ServerLogger, linesPerInterval: Int = 20, intervalSeconds: Int = 10) {
        self.logger = logger
        self.linesPerInterval = linesPerInterval
        self.intervalSeconds = intervalSeconds
        let seconds = intervalSeconds
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(seconds))
                guard let self else { return }
                self.report()
            }
        }
        reporter.withLock { $0 = task }
    }

    deinit { reporter.withLock { $0?.cancel() } }

    /// Writes the line `make` returns, unless this interval's lines are
    /// spent; then the line is only counted.
    func log(_ kind: Kind, from address: ClientAddress?, _ make: () -> String) {
        let write = interval.withLock { interval in
            guard interval.written < linesPerInterval else {
                interval.leftOut[kind, default: 0] += 1
                if let address { Self.count(address, in: &interval) }
                return false
            }
            interval.written += 1
            return true
        }
        if write { logger.log(make()) }
    }

    /// Counts what is never logged one by one (connections closed at accept).
    func count(_ kind: Kind, from address: ClientAddress) {
        interval.withLock { interval in
            interval.leftOut[kind, default: 0] += 1
            Self.count(address, in: &interval)
        }
    }

    /// Ends the interval: one line with what was left out of it, if anything.
    func report() {
        let ended = interval.withLock { interval in
            let ended = interval
            interval = Interval()
            return ended
        }
        guard !ended.leftOut.isEmpty else { return }
        let kinds = ended.leftOut.sorted { $0.value > $1.value }.map { "\($0.value) \($0.key)" }
        var line = "refusals: in the last \(intervalSeconds) s, " + kinds.joined(separator: ", ") + " not logged one by one"
        if let top = ended.byAddress.max(by: { $0.value < $1.value }) {
            line += "; most from \(top.key) (\(top.value))"
        }
        logger.log(line)
    }

    /// Stops the interval timer and writes what the last interval left out.
    func stop() {
        reporter.withLock { $0?.cancel() }
        report()
    }

    private static func count(_ address: ClientAddress, in interval: inout Interval) {
        if interval.byAddress[address] != nil || interval.byAddress.count < addressesMax {
            interval.byAddress[address, default: 0] += 1
        }
    }
}
