/// Names kept on this machine and never synced: hidden entries and editor scratch
/// files (DESIGN.md "Local-only entries"). Matching is on bytes, like a shell glob.
public enum LocalOnlyNames {
    /// Whole names that are local-only: vim's write test file and Windows' thumbnail
    /// cache and folder settings.
    static let exactNames: [String] = ["4913", "Thumbs.db", "desktop.ini"]

    /// Endings of local-only names: vim swap files, partial downloads, temp files.
    static let suffixes: [String] = [".swp", ".part", ".tmp"]

    /// True for names kept on this machine only and never synced: leading dot, `.*.sw?`,
    /// `*.swp`, `*~`, `~*`, `4913`, `#*#`, `.#*`, `*.part`, `*.tmp`, `Thumbs.db`, `desktop.ini`.
    public static func isLocalOnly(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard let first = utf8.first, let last = utf8.last else { return false }
        // A leading dot also covers `.*.sw?`, `.#*`, rsync's and Python's temp files.
        if first == UInt8(ascii: ".") || first == UInt8(ascii: "~") || last == UInt8(ascii: "~") { return true }
        if utf8.count >= 2 && first == UInt8(ascii: "#") && last == UInt8(ascii: "#") { return true }
        if exactNames.contains(where: { NameParts.sameBytes($0, name) }) { return true }
        return suffixes.contains { suffix in
            utf8.count >= suffix.utf8.count && utf8.suffix(suffix.utf8.count).elementsEqual(suffix.utf8)
        }
    }

    /// True when any component of a path is local-only: everything inside a hidden
    /// directory such as `.git` stays on this machine too.
    public static func isLocalOnly(pathComponents: [String]) -> Bool {
        pathComponents.contains(where: isLocalOnly)
    }
}
