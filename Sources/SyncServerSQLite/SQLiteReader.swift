import Dispatch
import Foundation
import SQLiteKit

/// One read connection with its own serial queue, so blocking sqlite3 calls
/// never run on Swift's cooperative pool.
///
/// `@unchecked Sendable`: `connection` is touched only by blocks running on
/// `queue`, which is serial, so it never has two users at once.
final class SQLiteReader: @unchecked Sendable {
    private let connection: Connection
    private let queue: DispatchQueue

    init(path: String, label: String) throws {
        connection = try Connection(
            path: path, options: Connection.Options(mode: .readWrite, synchronous: .normal))
        queue = DispatchQueue(label: label)
    }

    /// Runs `body` in a read transaction (one snapshot) on this reader's queue.
    func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            read(body) { continuation.resume(with: $0) }
        }
    }

    /// The same, handing the result to `completion` on this reader's queue.
    func read<T: Sendable>(
        _ body: @escaping @Sendable (Connection) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        queue.async {
            completion(Result { try self.connection.readTransaction { try body(self.connection) } })
        }
    }
}
