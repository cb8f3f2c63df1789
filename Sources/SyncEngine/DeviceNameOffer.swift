import SyncProtocol
import Synchronization

/// Tells the server this device's name with a push (`PushRequest.deviceName`),
/// so other machines' `notesfs log` can name it (docs/sync.md "Device names").
///
/// The name rides along until a push carrying it is answered, once per
/// transport (a mount session): the server keeps the latest name per device,
/// so a renamed device is shown under its new name after its next push. A
/// server from before names refuses the unknown field with 400 and changes
/// nothing; the push then goes again without it, and no later push carries
/// the name.
public final class DeviceNameOffer: Sendable {
    enum State: Equatable {
        /// Not yet taken by a server: the next push carries it.
        case waiting
        /// A server took it.
        case told
        /// The server refused the field: it predates names.
        case notUnderstood
    }

    /// The name as it travels: without control characters, cut to
    /// `PushRequest.deviceNameBytesMax` bytes at a character boundary.
    public let name: String
    private let state = Mutex(State.waiting)

    /// Nil when nothing of the name can travel (an empty one).
    public init?(name: String) {
        guard let sendable = PushRequest.sendableDeviceName(name) else { return nil }
        self.name = sendable
    }

    /// Whether a server took the name, for tests and status.
    public var told: Bool { state.withLock { $0 == .told } }

    /// Sends `request` with `send`, carrying the name while no server took it.
    public func push(
        _ request: PushRequest, with send: (PushRequest) async throws(TransportError) -> PushResponse
    ) async throws(TransportError) -> PushResponse {
        guard state.withLock({ $0 == .waiting }) else { return try await send(request) }
        var named = request
        named.deviceName = name
        do {
            let response = try await send(named)
            state.withLock { $0 = .told }
            return response
        } catch .rejected(status: 400, let code, let message) where Self.refusesTheName(code: code, message: message) {
            // An older server: its strict decoding named the field, and a 400 changed nothing.
            state.withLock { $0 = .notUnderstood }
            return try await send(request)
        }
    }

    /// An older server's answer to the field: `400 bad_request`, "deviceName: unknown field 'deviceName'".
    static func refusesTheName(code: String, message: String) -> Bool {
        code == ErrorCode.badRequest.rawValue && message.contains("deviceName")
    }
}
