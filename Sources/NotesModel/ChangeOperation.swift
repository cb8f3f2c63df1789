/// What a change does to its entity: the `op` of a pushed change and of an
/// outbox row.
public enum ChangeOperation: String, Sendable, Hashable, Codable {
    /// Create, edit, move, or revive a tombstone.
    case put
    /// Make a tombstone.
    case delete
}
