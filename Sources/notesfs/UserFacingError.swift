import Foundation
import SQLiteKit

/// Turns any error into one sentence a user can act on; no stack traces.
enum UserFacingError {
    static func describe(_ error: any Error) -> String {
        if let error = error as? SQLiteError {
            if error.isBusy {
                return "the notes database is locked by another process (is a mount running?). "
                    + "Stop it or try again in a moment."
            }
            if error.isCorrupt {
                return "the notes database is damaged (\(error.message)). "
                    + "Restore it from a backup, or move it aside and sync again from the server."
            }
            if error.isDiskFull {
                return "the disk is full. Free some space and try again; nothing was half-written."
            }
            return "database error: \(error.message)"
        }
        if let error = error as? LocalizedError, let description = error.errorDescription {
            return description
        }
        return String(describing: error)
    }
}
