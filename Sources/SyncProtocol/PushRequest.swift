import Foundation
import NotesModel

/// `POST /v1/push`: `{ "device", "deviceName"?, "changes": [Change], "cursor"? }`.
///
/// At most `ProtocolLimits.pushChangesMax` changes and
/// `pushPayloadBytesMax` decoded payload bytes (one larger change may travel
/// alone), at most one change per entity and per change id, parents before
/// children. Changes are applied in the order given.
public struct PushRequest: Hashable, Sendable, Codable {
    /// The device that made the changes (for logs and diagnostics).
    public var device: DeviceID
    /// The device's name as its user gave it (`notesfs mount --device-name`),
    /// for other machines' `notesfs log` only; at most `deviceNameBytesMax`
    /// bytes. Clients send it until a server took it; a server from before
    /// it refuses the field (400) and the client sends the push again without.
    public var deviceName: String?
    public var changes: [Change]
    /// The client's cursor, when it has one. A cursor from another server
    /// epoch gets `410`: the changes' base versions may come from a history
    /// the server lost, so the client must resync before it pushes.
    public var cursor: SyncCursor?

    /// The longest device name a push may carry, in UTF-8 bytes (what a
    /// conflict copy's title shows of it, too).
    public static let deviceNameBytesMax = ConflictPolicy.deviceNameBytesMax

    /// A name a push may carry: 1 to `deviceNameBytesMax` bytes, no C0
    /// control character or DEL (PostgreSQL's text cannot even hold NUL).
    public static func isValidDeviceName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= deviceNameBytesMax
            && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// `name` made valid to send, or nil when nothing is left: control
    /// characters dropped, cut at a character boundary.
    public static func sendableDeviceName(_ name: String) -> String? {
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F })
        let cut = String(NameParts.prefix(String(kept)[...], bytesMax: deviceNameBytesMax))
        return isValidDeviceName(cut) ? cut : nil
    }

    public init(device: DeviceID, deviceName: String? = nil, changes: [Change], cursor: SyncCursor? = nil) {
        self.device = device
        self.deviceName = deviceName
        self.changes = changes
        self.cursor = cursor
    }

    enum CodingKeys: String, CodingKey { case device, deviceName, changes, cursor }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownFields(CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        device = try container.decode(DeviceID.self, forKey: .device)
        deviceName = try container.decodeIfPresent(String.self, forKey: .deviceName)
        changes = try container.decode([Change].self, forKey: .changes)
        cursor = try container.decodeIfPresent(SyncCursor.self, forKey: .cursor)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(device, forKey: .device)
        try container.encodeIfPresent(deviceName, forKey: .deviceName)
        try container.encode(changes, forKey: .changes)
        try container.encodeIfPresent(cursor, forKey: .cursor)
    }
}

/// The answer to a push: one result per change, in order, the cursor
/// before the first change of the server's current epoch, and maybe the
/// cursor just past this push.
public struct PushResponse: Hashable, Sendable, Codable {
    public var results: [ChangeResult]
    /// A client with no cursor yet keeps this one, so that its next pull (or
    /// push) after a restore of the server meets `410` instead of mixing
    /// versions from two histories. Absent from servers that predate it.
    public var startCursor: SyncCursor?
    /// Present when the account's head stood at the request's cursor (or at
    /// 0 without one), so every version up to the new head is this push's
    /// own: once it has settled the results, the client may keep this cursor
    /// instead of pulling its own changes back.
    public var nextCursor: SyncCursor?
    /// The token's account, as in `ChangesPage.account`.
    public var account: String?

    public init(
        results: [ChangeResult], startCursor: SyncCursor? = nil, nextCursor: SyncCursor? = nil, account: String? = nil
    ) {
        self.results = results
        self.startCursor = startCursor
        self.nextCursor = nextCursor
        self.account = account
    }
}
