import Foundation

/// Reading a mount the way a user's tools do, and waiting for it to change
/// (for tests where another process, such as the sync engine, changes it).
extension MountFixture {
    /// The text of `path` (relative to the mount point), or nil when unreadable.
    public func text(_ path: String) -> String? {
        try? String(contentsOfFile: mountpoint + "/" + path, encoding: .utf8)
    }

    /// The names in the folder `path` (relative; "" is the root), sorted.
    public func names(_ path: String = "") -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: mountpoint + "/" + path)) ?? []).sorted()
    }

    /// True when `.notesfs/status.json` says no change is waiting to be sent.
    public var hasNothingPending: Bool {
        guard let json = text(".notesfs/status.json"),
            let status = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        else { return false }
        return status["pendingChanges"] as? Int == 0
    }

    /// Every note's path (relative, folders joined by "/") and text, found by
    /// walking the tree as `find` would; folders appear with a trailing "/"
    /// and no text. The control directory is hidden from listings, so it is not in it.
    public func tree() -> [String: String] {
        var entries: [String: String] = [:]
        func walk(_ folder: String) {
            for name in names(folder) {
                let path = folder.isEmpty ? name : folder + "/" + name
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: mountpoint + "/" + path, isDirectory: &isDirectory) else {
                    continue
                }
                if isDirectory.boolValue {
                    entries[path + "/"] = ""
                    walk(path)
                } else {
                    entries[path] = text(path) ?? "<unreadable>"
                }
            }
        }
        walk("")
        return entries
    }

    /// Runs `bash -c script` in the mount point and returns its standard
    /// output; throws with its standard error when it exits non-zero.
    @discardableResult
    public func checkedShell(_ script: String) throws -> String {
        let result = try shell(script)
        guard result.status == 0 else {
            throw Failure("`\(script)` failed (\(result.status)): \(result.standardError)")
        }
        return result.standardOutput
    }

    /// Polls `condition` every 20 ms; throws with `what` and the logs of
    /// `mounts` when it has not held within `seconds`.
    public static func waitFor(
        _ what: String, mounts: [MountFixture], seconds: Double = 60, _ condition: () throws -> Bool
    ) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? condition()) == true { return }
            usleep(20_000)
        }
        let logs = mounts.map { $0.logTail() }.joined(separator: "\n---\n")
        throw Failure("timed out waiting until \(what)\n\(logs)")
    }
}
