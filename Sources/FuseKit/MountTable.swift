import Foundation

/// The kernel's table of mounts (`/proc/self/mountinfo`), for refusing a
/// mount over a mount and for finding what serves a mount point.
public enum MountTable {
    public struct Mount: Sendable, Equatable {
        public var mountpoint: String
        public var fileSystemType: String
        public var source: String
    }

    public static func mounts() -> [Mount] {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard let separator = fields.firstIndex(of: "-"), fields.count > separator + 2, fields.count > 4 else {
                return nil
            }
            return Mount(
                mountpoint: unescape(fields[4]), fileSystemType: fields[separator + 1],
                source: unescape(fields[separator + 2]))
        }
    }

    /// The mount at `path` (an absolute path), if any.
    public static func mount(at path: String) -> Mount? {
        mounts().last { $0.mountpoint == path }
    }

    /// mountinfo writes space, tab, newline and backslash as `\ooo`.
    static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        let source = Array(field.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "\\"), index + 3 < source.count + 0,
                let value = UInt8(String(decoding: source[index + 1...index + 3], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
