import Foundation
import NotesModel

/// Why the server will never apply a change, whatever its base. Unknown
/// reasons from a newer server decode as themselves.
public struct RefusalReason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The note body is larger than `ProtocolLimits.noteBytesMax`.
    public static let noteTooLarge = RefusalReason(rawValue: "note_too_large")
    /// The title or folder name is longer than `ProtocolLimits.nameBytesMax`.
    public static let nameTooLong = RefusalReason(rawValue: "name_too_long")
    /// The folder move would put a folder inside itself.
    public static let folderCycle = RefusalReason(rawValue: "folder_cycle")

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The answer to one change of a push:
/// `{ "changeId", "status": "applied", "version" }`,
/// `{ "changeId", "status": "conflict", "current": EntityVersion | null }` or
/// `{ "changeId", "status": "refused", "reason", "message" }`.
///
/// A change id the server has answered before gets that first answer again,
/// byte for byte, and is never applied twice.
public struct ChangeResult: Hashable, Sendable, Codable {
    /// What happened to a change.
    public enum Outcome: Hashable, Sendable {
        /// Applied; the entity now has this version.
        case applied(version: Int64)
        /// The base was not the current version. `current` is the server's row
        /// (maybe a tombstone), or nil when the server does not know the entity
        /// (merge it as a delete).
        case conflict(current: EntityVersion?)
        /// The change can never apply; keep its text locally and converge to
        /// the server's copy.
        case refused(reason: RefusalReason, message: String)
    }

    public var changeId: ChangeID
    public var outcome: Outcome

    public init(changeId: ChangeID, outcome: Outcome) {
        self.changeId = changeId
        self.outcome = outcome
    }

    /// `applied`, `conflict` or `refused`.
    public var status: String {
        switch outcome {
        case .applied: "applied"
        case .conflict: "conflict"
        case .refused: "refused"
        }
    }

    enum CodingKeys: String, CodingKey { case changeId, status, version, current, reason, message }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        changeId = try container.decode(ChangeID.self, forKey: .changeId)
        let status = try container.decode(String.self, forKey: .status)
        switch status {
        case "applied":
            outcome = .applied(version: try container.decode(Int64.self, forKey: .version))
        case "conflict":
            outcome = .conflict(current: try container.decodeNullable(EntityVersion.self, forKey: .current))
        case "refused":
            outcome = .refused(
                reason: try container.decode(RefusalReason.self, forKey: .reason),
                message: try container.decodeNullable(String.self, forKey: .message) ?? "")
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .status, in: container, debugDescription: "unknown status '\(status.prefix(32))'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(changeId, forKey: .changeId)
        try container.encode(status, forKey: .status)
        switch outcome {
        case .applied(let version):
            try container.encode(version, forKey: .version)
        case .conflict(let current):
            try container.encodeNullable(current, forKey: .current)
        case .refused(let reason, let message):
            try container.encode(reason, forKey: .reason)
            try container.encode(message, forKey: .message)
        }
    }
}
