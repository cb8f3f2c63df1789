import NotesModel
import SyncProtocol

/// How a history listing names the machines that made its versions
/// (`notesfs log`): this one as `this machine`, another by the name it last
/// told the server, with the last 8 digits of its id in parentheses when
/// another machine of the listing (this one included) goes by the same
/// name, or as `device` and those digits when it told none. Names are other
/// people's text: shown escaped, never trusted for anything else.
public struct DeviceLabels: Sendable {
    private let this: DeviceID
    private let names: [DeviceID: String]
    private let devicesByName: [String: Set<DeviceID>]

    public init(versions: [VersionSummary], this: (id: DeviceID, name: String)) {
        var names: [DeviceID: String] = [:]
        var devicesByName: [String: Set<DeviceID>] = [this.name: [this.id]]
        for version in versions {
            guard let device = version.device, device != this.id, let name = version.deviceName else { continue }
            names[device] = name
            devicesByName[name, default: []].insert(device)
        }
        self.this = this.id
        self.names = names
        self.devicesByName = devicesByName
    }

    /// The words for the machine that made a version.
    public func label(_ device: DeviceID?) -> String {
        guard let device else { return "unknown device" }
        if device == this { return "this machine" }
        // The last digits: a time-ordered id begins with its creation time.
        let digits = String(device.description.suffix(8))
        guard let name = names[device] else { return "device " + digits }
        let shown = Self.printable(name)
        return devicesByName[name, default: []].count > 1 ? "\(shown) (\(digits))" : shown
    }

    /// `text` with what a terminal would act on written out: control
    /// characters, line and paragraph separators and bidirectional
    /// overrides become `\u{…}`, a backslash `\\`.
    public static func printable(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: shown += "\\\\"
            case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                shown += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}
