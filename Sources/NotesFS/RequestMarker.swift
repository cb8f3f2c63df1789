import Foundation

/// Marks the threads that are serving a kernel request right now, so a store
/// observer can tell a commit the kernel made itself (its caches are already
/// right) from one made behind its back (sync, another caller in the process).
enum RequestMarker {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs `body` marked as serving a request.
    static func serving<T>(_ body: () throws -> T) rethrows -> T {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, nil) }
        return try body()
    }

    /// True on a thread inside `serving`.
    static var isServing: Bool { pthread_getspecific(key) != nil }
}
