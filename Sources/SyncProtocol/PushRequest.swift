import Foundation
import NotesModel

/// `POST /v1/push`: `{ "device", "changes": [Change] }`.
///
/// At most `ProtocolLimits.pushChangesMax` changes and
/// `pushPayloadBytesMax` decoded payload bytes (one larger change may travel
/// alone), at most one change per entity and per change id, parents before
/// children. Changes are applied in the order given.
public struct PushRequest: Hashable, Sendable, Codable {
    /// The device that made the changes (for logs and diagnostics).
    public var device: DeviceID
    public var changes: [Change]

    public init(device: DeviceID, changes: [Change]) {
        self.device = device
        self.changes = changes
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case device, changes }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownFields(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        device = try container.decode(DeviceID.self, forKey: .device)
        changes = try container.decode([Change].self, forKey: .changes)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(device, forKey: .device)
        try container.encode(changes, forKey: .changes)
    }
}

/// The reply to a push: one result per change, in the order of the request.
public struct PushResponse: Hashable, Sendable, Codable {
    public var results: [ChangeResult]

    public init(results: [ChangeResult]) {
        self.results = results
    }
}
