/// Maps stored titles to file names in the mount and back (DESIGN.md "Files and
/// folders in the mount"). Showing a title never changes it.
public enum NameCodec {
    /// The longest file name, in UTF-8 bytes, that Linux file systems accept.
    public static let maxNameBytes = 255

    /// What an empty title, `.` or `..` is shown as.
    public static let untitledName = "Untitled"

    /// The hidden control directory in the mount root.
    public static let controlDirectoryName = ".notesfs"
    /// What a note titled `.notesfs` in the root is shown as, so it cannot hide the control directory.
    public static let controlDirectoryStandIn = "notesfs"

    /// Hex digits of the title's SHA-256 kept in a shortened name: enough that two
    /// long titles sharing a prefix practically never share a name.
    static let hashHexDigits = 8

    /// The name a stored title is shown under (before any uniqueness suffix). `inRoot`
    /// matters for the reserved `.notesfs`, shown as `notesfs` in the root only.
    public static func displayName(forTitle title: String, inRoot: Bool) -> String {
        if title.utf8.isEmpty || isDotOrDotDot(title) { return untitledName }
        if inRoot && NameParts.sameBytes(title, controlDirectoryName) { return controlDirectoryStandIn }
        let shown = substitutingForbiddenCharacters(title)
        if shown.utf8.count <= maxNameBytes { return shown }
        // Cut, but keep the extension and a hash of the whole title, so long
        // titles sharing a prefix get different, stable names.
        let hash = SHA256.hexHash(title.utf8).prefix(hashHexDigits)
        let (stem, ext) = NameParts.split(shown)
        return NameParts.fit(stem: stem, insert: "…" + hash, ext: ext, bytesMax: maxNameBytes)
    }

    /// The title a name made in the mount is stored as: exactly the name.
    public static func title(forName name: String) -> String {
        name
    }

    /// Whether `name` is acceptable as a file name made in the mount (non-empty, no "/",
    /// no NUL, not "." or "..", ≤ 255 UTF-8 bytes).
    public static func isValidFileName(_ name: String) -> Bool {
        let utf8 = name.utf8
        return !utf8.isEmpty && utf8.count <= maxNameBytes && !isDotOrDotDot(name)
            && !utf8.contains(UInt8(ascii: "/")) && !utf8.contains(0)
    }

    /// `/` as `∕` (U+2215) and NUL as `␀` (U+2400): look-alikes, so the name still
    /// reads as the title.
    static func substitutingForbiddenCharacters(_ title: String) -> String {
        guard title.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 }) else { return title }
        var scalars = String.UnicodeScalarView()
        for scalar in title.unicodeScalars {
            switch scalar {
            case "/": scalars.append("\u{2215}")
            case "\0": scalars.append("\u{2400}")
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    static func isDotOrDotDot(_ name: String) -> Bool {
        NameParts.sameBytes(name, ".") || NameParts.sameBytes(name, "..")
    }
}
