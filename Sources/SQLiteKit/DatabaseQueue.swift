import Dispatch

/// Owns a `Connection` and runs every use of it on one serial dispatch queue,
/// so the blocking sqlite3 calls never run on Swift's cooperative pool and the
/// connection never has two users at once.
///
/// `@unchecked Sendable`: the connection is only touched inside `queue.sync`,
/// and the queue is serial, so at most one thread uses it at a time.
public final class DatabaseQueue: @unchecked Sendable {
    private let connection: Connection
    private let queue: DispatchQueue
    private let onQueueKey = DispatchSpecificKey<Bool>()

    /// Opens the database at `path`, then runs `prepare` (migrations, pragmas)
    /// before anyone else can use it.
    public init(
        path: String,
        options: Connection.Options = Connection.Options(),
        label: String = "sqlitekit.queue",
        prepare: (Connection) throws -> Void = { _ in }
    ) throws {
        let connection = try Connection(path: path, options: options)
        try prepare(connection)
        self.connection = connection
        self.queue = DispatchQueue(label: label)
        queue.setSpecific(key: onQueueKey, value: true)
    }

    /// The path of the database file.
    public var path: String { connection.path }

    /// Runs `body` with exclusive use of the connection and returns its result.
    public func sync<T>(_ body: (Connection) throws -> T) rethrows -> T {
        // A nested sync on the same serial queue would deadlock; the caller
        // already owns the connection, so running inline is the correct answer.
        if DispatchQueue.getSpecific(key: onQueueKey) == true {
            return try body(connection)
        }
        return try queue.sync { try body(connection) }
    }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`).
    public func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try sync { connection in try connection.transaction { try body(connection) } }
    }

    /// Runs `body` in a read transaction, seeing one snapshot.
    public func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try sync { connection in try connection.readTransaction { try body(connection) } }
    }
}
