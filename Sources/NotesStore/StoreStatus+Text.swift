import Foundation

// The two renderings of a status snapshot, shared by `notesfs status` and the
// mount's `.notesfs/status` and `.notesfs/status.json`.
extension StoreStatus {
    /// A short human summary; `now` is for ages ("3 min ago"). Every line,
    /// the last too, ends in a newline.
    public func humanText(nowNanoseconds now: Int64) -> String {
        var lines: [String] = []
        if let free = diskFullFreeBytes {
            lines.append(
                "Disk full: saves are failing (\(free >> 20) MiB free; saves need \(diskReserveBytes >> 20) MiB). "
                    + "Nothing saved before is lost; free some space on the disk that holds the notes database "
                    + "and saves work again.")
        }
        let offline = sync.serverURL == nil
        if offline {
            // Nothing is waiting for anything: these notes live here.
            lines.append(
                "Offline notes folder: \(Self.counted(noteCount, "note")) in \(Self.counted(folderCount, "folder")), "
                    + "kept only on this machine (no server; 'notesfs mount --help' says how to add one)")
        } else {
            lines.append(syncLine)
            lines.append("Notes: \(Self.number(noteCount)) in \(Self.counted(folderCount, "folder"))")
            if let waiting = waitingWords {
                var line = "Waiting to be sent: \(waiting)"
                if let oldest = oldestPendingNanoseconds { line += " (oldest change \(Self.age(now - oldest)) old)" }
                lines.append(line)
            }
            if let success = sync.lastSuccessNanoseconds {
                lines.append("Last successful sync: \(Self.age(now - success)) ago")
            } else {
                lines.append("Last successful sync: never")
            }
        }
        if massDeleteHold.isHeld {
            lines.append(massDeleteHold.description)
        }
        if !heldForSize.isEmpty {
            let limit =
                noteSizeLimitBytes % (1 << 20) == 0 ? "\(noteSizeLimitBytes >> 20) MiB" : "\(noteSizeLimitBytes)-byte"
            lines.append(
                "Held back from sync (a write past the \(limit) note limit was refused, so the note may be cut short;"
                    + " make it smaller or delete it):")
            for path in heldForSize.prefix(20) { lines.append("  \(path)") }
        }
        if !refusals.isEmpty {
            lines.append("Refused by the server (text kept locally):")
            for refusal in refusals.prefix(20) {
                lines.append("  \(refusal.title): \(refusal.reason)" + (refusal.keptAt.map { " — kept at \($0)" } ?? ""))
            }
        }
        if !conflictCopies.isEmpty {
            lines.append(
                "Conflict copies (\(Self.number(conflictCopies.count)); see them with 'notesfs conflicts', settle one "
                    + "with 'notesfs conflicts resolve PATH --keep note|copy|both'):")
            for path in conflictCopies.prefix(20) { lines.append("  \(path)") }
            if conflictCopies.count > 20 { lines.append("  … and \(conflictCopies.count - 20) more") }
        }
        if !offline && !unsyncedPaths.isEmpty {
            lines.append("Not yet synced:")
            let shown = unsyncedPaths.prefix(Self.unsyncedShownMax)
            for path in shown { lines.append("  \(path)") }
            let total = max(unsyncedPaths.count, pendingNotes + pendingFolders)
            if total > shown.count { lines.append("  … and \(Self.number(total - shown.count)) more") }
        }
        if localOnlyFiles > 0 || localOnlyTopLevel > 0 {
            var line = "\(Self.counted(localOnlyFiles, "file")) kept only here (never synced)"
            if !localOnlyPaths.isEmpty {
                line += ": " + localOnlyPaths.joined(separator: ", ")
                if localOnlyTopLevel > localOnlyPaths.count { line += ", …" }
            }
            lines.append(line)
        }
        if let retry = live?.retry { lines.append(retry) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Paths the human text lists under "Not yet synced".
    static let unsyncedShownMax = 20

    /// The first line with a server: what sync is doing now.
    var syncLine: String {
        let server = sync.serverURL ?? ""
        if massDeleteHold.isHeld { return "Sync: deletions held by the mass-delete guard (other changes still sync)" }
        let firstSync = sync.lastSuccessNanoseconds == nil
        if let live, live.running {
            let pace = Self.pace(live)
            if firstSync {
                let received = live.expectedTotal.map {
                    "\(Self.number(live.received)) of about \(Self.number(max($0, live.received))) notes received"
                } ?? "\(Self.number(live.received)) notes received so far"
                return "Sync: first sync: \(received) from \(server)"
                    + (pace.isEmpty ? "" : " (" + pace.joined(separator: ", ") + ")")
            }
            let counts = ["\(Self.number(live.received)) received", "\(Self.number(live.sent)) sent"]
            return "Sync: syncing with \(server) now (" + (counts + pace).joined(separator: ", ") + ")"
        }
        if sync.lastFailed { return "Sync: failing — \(sync.lastError ?? "unknown error")" }
        if firstSync {
            return live == nil
                ? "Sync: first sync not finished (\(Self.counted(noteCount, "note")) here so far); it goes on while "
                    + "the notes are mounted"
                : "Sync: first sync with \(server) starting"
        }
        if let waiting = waitingWords { return "Sync: \(waiting) waiting to be sent" }
        return "Sync: up to date with \(server)"
    }

    /// "12 notes and 1 folder", or nil when nothing waits.
    public var waitingWords: String? {
        var parts: [String] = []
        if pendingNotes > 0 { parts.append(Self.counted(pendingNotes, "note")) }
        if pendingFolders > 0 { parts.append(Self.counted(pendingFolders, "folder")) }
        // Queued changes of entities that are gone from both tables (never expected).
        if parts.isEmpty && pendingCount > 0 { parts.append(Self.counted(pendingCount, "change")) }
        return parts.isEmpty ? nil : parts.joined(separator: " and ")
    }

    /// ["1,450/s", "about 6 s left"] while a run moves fast enough to tell.
    static func pace(_ live: LiveSync) -> [String] {
        let rate = live.elapsedSeconds > 0.2 ? Double(live.received + live.sent) / live.elapsedSeconds : 0
        guard rate >= 1 else { return [] }
        var parts = ["\(number(Int(rate)))/s"]
        if let total = live.expectedTotal, live.received > 0, total > live.received {
            let left = Double(total - live.received) / max(1, Double(live.received) / live.elapsedSeconds)
            parts.append("about \(Int(left.rounded(.up))) s left")
        }
        return parts
    }

    /// `1234567` as `1,234,567`.
    static func number(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// "1 note", "3,120 notes".
    static func counted(_ value: Int, _ noun: String) -> String {
        "\(number(value)) \(noun)\(value == 1 ? "" : "s")"
    }

    /// The same facts as JSON, for scripts.
    public func json() -> Data {
        var object: [String: Any] = [
            "notes": noteCount,
            "folders": folderCount,
            "offline": sync.serverURL == nil,
            "pending": pendingNotes + pendingFolders,
            "pendingNotes": pendingNotes,
            "pendingFolders": pendingFolders,
            "pendingChanges": pendingCount,
            "unsynced": unsyncedPaths,
            "localOnlyFiles": localOnlyFiles,
            "localOnly": localOnlyPaths,
            "firstSyncDone": sync.lastSuccessNanoseconds != nil,
            "conflictCopies": conflictCopies,
            "heldForSize": heldForSize,
            "heldDeletions": massDeleteHold.notesToSend + massDeleteHold.foldersToSend
                + massDeleteHold.notesToApply + massDeleteHold.foldersToApply,
            "syncConfigured": sync.serverURL != nil,
            "lastSyncFailed": sync.lastFailed,
            "deviceName": sync.deviceName,
            "refusals": refusals.map { refusal -> [String: Any] in
                var item: [String: Any] = ["title": refusal.title, "reason": refusal.reason]
                if let keptAt = refusal.keptAt { item["keptAt"] = keptAt }
                return item
            },
        ]
        if massDeleteHold.isHeld {
            object["massDeleteHold"] = [
                "sinceUnixSeconds": Double(massDeleteHold.sinceNanoseconds ?? 0) / 1e9,
                "notesToSend": massDeleteHold.notesToSend, "foldersToSend": massDeleteHold.foldersToSend,
                "notesToApply": massDeleteHold.notesToApply, "foldersToApply": massDeleteHold.foldersToApply,
                "deletedInWindow": massDeleteHold.trippedDeletions,
                "liveAtWindowStart": massDeleteHold.trippedLive, "message": massDeleteHold.description,
            ] as [String: Any]
        }
        if let live {
            var sync: [String: Any] = [
                "running": live.running, "received": live.received, "sent": live.sent,
                "elapsedSeconds": live.elapsedSeconds,
            ]
            if let total = live.expectedTotal { sync["expectedTotal"] = total }
            if let retry = live.retry { sync["retry"] = retry }
            object["live"] = sync
        }
        if !conflictCopies.isEmpty {
            object["conflictCopiesResolve"] = "notesfs conflicts resolve PATH --keep note|copy|both"
        }
        if let free = diskFullFreeBytes {
            object["diskFull"] = ["freeBytes": free, "reserveBytes": diskReserveBytes] as [String: Any]
        }
        if let oldest = oldestPendingNanoseconds { object["oldestPendingUnixSeconds"] = Double(oldest) / 1e9 }
        if let success = sync.lastSuccessNanoseconds { object["lastSuccessUnixSeconds"] = Double(success) / 1e9 }
        if let error = sync.lastError { object["lastError"] = error }
        if let server = sync.serverURL { object["server"] = server }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return data + Data("\n".utf8)
    }

    static func age(_ nanoseconds: Int64) -> String {
        let seconds = max(0, nanoseconds / 1_000_000_000)
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3_600 { return "\(seconds / 60) min" }
        if seconds < 86_400 { return "\(seconds / 3_600) h" }
        return "\(seconds / 86_400) d"
    }
}
