/// Unique names within one folder: a newcomer whose name is taken is shown with
/// the lowest free ` (n)` suffix (DESIGN.md: display names are sticky and unique).
public enum DisplayNames {
    /// `todo.md`, 2 -> `todo (2).md`: suffix before the last extension (a leading-dot name
    /// like `.bashrc` has no extension). Result stays ≤ 255 bytes (the stem is cut).
    public static func suffixed(_ name: String, number: Int) -> String {
        let (stem, ext) = NameParts.split(name)
        return NameParts.fit(stem: stem, insert: " (\(number))", ext: ext, bytesMax: NameCodec.maxNameBytes)
    }

    /// `base` itself when free, else the lowest free `suffixed(base, n)` for n = 2, 3, ...
    /// Ends because only finitely many names in a folder are taken.
    public static func lowestFree(_ base: String, isTaken: (String) -> Bool) -> String {
        if !isTaken(base) { return base }
        var number = 2
        while true {
            let candidate = suffixed(base, number: number)
            if !isTaken(candidate) { return candidate }
            number += 1
        }
    }
}
