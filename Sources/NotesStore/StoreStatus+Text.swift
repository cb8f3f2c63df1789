import Foundation

// The two renderings of a status snapshot, shared by `notesfs status` and the
// mount's `.notesfs/status` and `.notesfs/status.json`.
extension StoreStatus {
    /// A short human summary; `now` is for ages ("3 min ago").
    public func humanText(nowNanoseconds now: Int64) -> String {
        var lines: [String] = []
        if let free = diskFullFreeBytes {
            lines.append(
                "Disk full: saves are failing (\(free >> 20) MiB free; saves need \(diskReserveBytes >> 20) MiB). "
                    + "Nothing saved before is lost; free some space on the disk that holds the notes database "
                    + "and saves work again.")
        }
        let syncLine: String
        if sync.serverURL == nil {
            syncLine = "Sync: off (offline notes folder; no server configured)"
        } else if massDeleteHold.isHeld {
            syncLine = "Sync: deletions held by the mass-delete guard (other changes still sync)"
        } else if pendingCount == 0 && !sync.lastFailed {
            syncLine = "Sync: up to date with \(sync.serverURL ?? "")"
        } else if sync.lastFailed {
            syncLine = "Sync: failing — \(sync.lastError ?? "unknown error")"
        } else {
            syncLine = "Sync: \(pendingCount) change\(pendingCount == 1 ? "" : "s") waiting to be sent"
        }
        lines.append(syncLine)
        lines.append("Notes: \(noteCount) in \(folderCount) folder\(folderCount == 1 ? "" : "s")")
        var pending = "Pending: \(pendingCount)"
        if let oldest = oldestPendingNanoseconds { pending += " (oldest \(Self.age(now - oldest)) old)" }
        lines.append(pending)
        if let success = sync.lastSuccessNanoseconds {
            lines.append("Last successful sync: \(Self.age(now - success)) ago")
        } else if sync.serverURL != nil {
            lines.append("Last successful sync: never")
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
                "Conflict copies (\(conflictCopies.count); see them with 'notesfs conflicts', settle one with "
                    + "'notesfs conflicts resolve PATH --keep note|copy|both'):")
            for path in conflictCopies.prefix(20) { lines.append("  \(path)") }
            if conflictCopies.count > 20 { lines.append("  … and \(conflictCopies.count - 20) more") }
        }
        if !unsyncedPaths.isEmpty {
            lines.append("Not yet synced:")
            for path in unsyncedPaths.prefix(20) { lines.append("  \(path)") }
            if unsyncedPaths.count > 20 { lines.append("  … and \(unsyncedPaths.count - 20) more") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The same facts as JSON, for scripts.
    public func json() -> Data {
        var object: [String: Any] = [
            "notes": noteCount,
            "folders": folderCount,
            "pending": pendingCount,
            "unsynced": unsyncedPaths,
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
