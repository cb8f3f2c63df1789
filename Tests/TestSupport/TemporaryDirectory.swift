import Foundation

/// A fresh directory under the system temporary directory, removed on `remove()`.
/// Tests call `remove()` in a `defer` so a failing test still cleans up.
public struct TemporaryDirectory: Sendable {
    public let url: URL

    public init(prefix: String = "notesfs-test") throws {
        let base = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        url = base.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public var path: String { url.path }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
