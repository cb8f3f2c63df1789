import Foundation

/// An error that already is an errno value, for the binding to send as it is.
public struct FileSystemError: Error, Equatable, CustomStringConvertible {
    public let errno: Int32

    public init(_ errno: Int32) { self.errno = errno }

    public var description: String { "errno \(errno) (\(String(cString: strerror(errno))))" }

    public static let notFound = FileSystemError(ENOENT)
    public static let exists = FileSystemError(EEXIST)
    public static let notPermitted = FileSystemError(EPERM)
    public static let notSupported = FileSystemError(EOPNOTSUPP)
    public static let noData = FileSystemError(ENODATA)
    public static let invalid = FileSystemError(EINVAL)
    public static let accessDenied = FileSystemError(EACCES)
    public static let notADirectory = FileSystemError(ENOTDIR)
    public static let isADirectory = FileSystemError(EISDIR)
    public static let badHandle = FileSystemError(EBADF)
    public static let nameTooLong = FileSystemError(ENAMETOOLONG)
    public static let range = FileSystemError(ERANGE)
    public static let io = FileSystemError(EIO)
}
