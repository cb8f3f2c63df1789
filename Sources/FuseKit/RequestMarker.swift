import Foundation

/// Marks the threads that are serving a kernel request right now, so code
/// called from a request can tell a change the kernel made itself (its caches
/// are already right) from one made behind its back (another thread, another
/// caller in the process). A request that changes names also records the
/// directories it changes: the kernel resets its cached listings of those
/// itself, but not of any other directory the same change touched.
public enum RequestMarker {
    /// The directory inodes a request changes names in (0 = none).
    public struct Directories: Sendable {
        public var first: UInt64 = 0
        public var second: UInt64 = 0

        public init(first: UInt64 = 0, second: UInt64 = 0) {
            self.first = first
            self.second = second
        }

        public func contains(_ inode: UInt64) -> Bool { inode != 0 && (inode == first || inode == second) }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs `body` marked as serving a request that changes names in `directories`.
    public static func serving<T>(_ directories: Directories = Directories(), _ body: () throws -> T) rethrows -> T {
        try withUnsafePointer(to: directories) { pointer in
            pthread_setspecific(key, UnsafeRawPointer(pointer))
            defer { pthread_setspecific(key, nil) }
            return try body()
        }
    }

    /// True on a thread inside `serving`.
    public static var isServing: Bool { pthread_getspecific(key) != nil }

    /// The directories the request being served on this thread changes, if any.
    public static var currentDirectories: Directories? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return pointer.assumingMemoryBound(to: Directories.self).pointee
    }
}
