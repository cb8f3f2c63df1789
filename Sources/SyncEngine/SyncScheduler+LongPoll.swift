import NotesStore
import SyncProtocol

// The long poll: one request parked at the server at a time, so a change on
// another machine arrives within moments instead of at the next timed run.
extension SyncScheduler {
    func pollLoop() async {
        var pollBackoff = Backoff(baseSeconds: 0.5, capSeconds: configuration.pollBackoffCapSeconds)
        var failing = false
        // The first run (started with the loop) pulls what there is; polling
        // before it ends would only ask for the same rows.
        try? await clock.sleep(until: nil, orUntil: runEnded)
        while !stopped && !Task.isCancelled {
            if blocked {
                // Another account's feed is none of this store's business;
                // a run the user asks for checks again.
                try? await clock.sleep(
                    until: clock.now() + Double(configuration.longPollWaitSeconds), orUntil: runEnded)
                continue
            }
            guard let cursorText = (try? await replica.syncState().cursor) ?? nil else {
                // No cursor until the first run has pulled. While that run
                // fails, probe the server, so its return is noticed long
                // before the run's backoff (up to minutes) ends.
                if case .failed? = lastOutcome {
                    do {
                        _ = try await transport.changes(since: nil, limit: 1, waitSeconds: 0)
                        pollBackoff.succeeded()
                        backoff.succeeded()
                        retryAt = nil
                        await triggerAndWait()
                    } catch {
                        try? await clock.sleep(seconds: pollBackoff.failed(unit: random()))
                    }
                } else {
                    // The next run may bring a cursor.
                    try? await clock.sleep(
                        until: clock.now() + Double(configuration.longPollWaitSeconds), orUntil: runEnded)
                }
                continue
            }
            do {
                let page = try await transport.changes(
                    since: SyncCursor(rawValue: cursorText), limit: 1, waitSeconds: configuration.longPollWaitSeconds)
                pollBackoff.succeeded()
                if failing {
                    failing = false
                    log("sync: the server answers again")
                    backoff.succeeded()
                    retryAt = nil
                    await triggerAndWait()
                    continue
                }
                guard !page.changes.isEmpty || page.hasMore else { continue }
                // The page starts where we polled, or past our own pushes.
                let polled = SyncCursor(rawValue: cursorText)
                let start = page.from ?? polled
                let current = ((try? await replica.syncState().cursor) ?? nil).map(SyncCursor.init(rawValue:))
                if current != start {
                    // Our cursor moved meanwhile (our own run pulled it, or a
                    // push settled): poll again from there. Unmoved while the
                    // server started later: a push reply we never heard, so a
                    // run catches up (polling again would get the same page).
                    if current == polled { await triggerAndWait() }
                    continue
                }
                // A page that holds all that happened is applied as it is,
                // instead of being pulled again by a run.
                if await engine.applyPolled(page, since: start) { continue }
                await triggerAndWait()
            } catch {
                if stopped || Task.isCancelled { return }
                switch error {
                case .cursorGone:
                    await triggerAndWait()
                    try? await clock.sleep(seconds: pollBackoff.failed(unit: random()))
                default:
                    failing = true
                    try? await clock.sleep(seconds: pollBackoff.failed(unit: random()))
                }
            }
        }
    }

    /// Triggers a run and waits until one ends (bounded), so a poll that
    /// keeps seeing the same change cannot spin.
    func triggerAndWait() async {
        _ = runEnded.take()
        requestRun()
        try? await clock.sleep(until: clock.now() + configuration.backoffCapSeconds + 5, orUntil: runEnded)
    }
}
