import Foundation

/// Why a mount could not start, said so a user can act on it.
public enum MountError: Error, CustomStringConvertible, LocalizedError {
    case sessionFailed(String)
    case mountFailed(String)
    case refused(String)

    public var description: String {
        switch self {
        case .sessionFailed(let message): "FUSE session failed: \(message)"
        case .mountFailed(let path):
            "could not mount on \(path) (is /dev/fuse available and fusermount3 installed? see the log)"
        case .refused(let message): message
        }
    }

    public var errorDescription: String? { description }
}
