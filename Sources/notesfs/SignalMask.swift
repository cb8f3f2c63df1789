import Foundation

enum SignalMask {
    /// Unblocks every signal for this thread (and threads it starts later).
    static func clear() {
        var empty = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, nil)
    }
}
