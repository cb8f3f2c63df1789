/// Splits names into stem and extension and fits them into a byte limit; shared by
/// every rule that puts text before an extension, so they all agree on what one is.
public enum NameParts {
    /// The longest tail after the last dot that still counts as an extension, dot
    /// included. Titles are often sentences ("Call mom. Then buy milk"); a long
    /// or spaced tail is part of the sentence, not a file type.
    static let extensionBytesMax = 16

    /// `archive.tar.gz` -> (`archive.tar`, `.gz`); `.bashrc` -> (`.bashrc`, ``);
    /// `Call mom. Then buy milk` -> (the whole name, ``).
    public static func split(_ name: String) -> (stem: Substring, ext: Substring) {
        let utf8 = name.utf8
        let dot = UInt8(ascii: ".")
        // Leading dots mark hidden names (`.bashrc`, `..x`), never an extension.
        guard let firstNonDot = utf8.firstIndex(where: { $0 != dot }),
            let lastDot = utf8[firstNonDot...].lastIndex(of: dot)
        else { return (name[...], name[name.endIndex...]) }
        let ext = utf8[lastDot...]
        let isExtension =
            ext.count >= 2 && ext.count <= extensionBytesMax
            && !ext.contains(where: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D })
        guard isExtension else { return (name[...], name[name.endIndex...]) }
        return (name[..<lastDot], name[lastDot...])
    }

    /// `stem + insert + ext`, with the stem cut at a character boundary so the whole
    /// is at most `bytesMax` UTF-8 bytes. `insert` and `ext` are always kept whole.
    public static func fit(stem: Substring, insert: String, ext: Substring, bytesMax: Int) -> String {
        let fixedBytes = insert.utf8.count + ext.utf8.count
        // Callers bound their inserts and extensions are at most `extensionBytesMax`.
        precondition(fixedBytes < bytesMax, "insert '\(insert)' leaves no room for a stem")
        let kept = stem.utf8.count + fixedBytes <= bytesMax ? stem : prefix(stem, bytesMax: bytesMax - fixedBytes)
        return String(kept) + insert + String(ext)
    }

    /// The longest prefix of `text` of at most `bytesMax` UTF-8 bytes ending at a
    /// character boundary; at a scalar boundary when the first character alone is
    /// too long (a letter with thousands of combining marks is one character).
    public static func prefix(_ text: Substring, bytesMax: Int) -> Substring {
        if text.utf8.count <= bytesMax { return text }
        var end = text.startIndex
        var bytes = 0
        for index in text.indices {
            let next = text.index(after: index)
            bytes += text.utf8.distance(from: index, to: next)
            if bytes > bytesMax { break }
            end = next
        }
        if end == text.startIndex {
            bytes = 0
            for index in text.unicodeScalars.indices {
                bytes += UTF8.width(text.unicodeScalars[index])
                if bytes > bytesMax { break }
                end = text.unicodeScalars.index(after: index)
            }
        }
        return text[..<end]
    }

    /// Byte-for-byte equality: `String ==` treats canonically equivalent texts
    /// (precomposed and decomposed `é`) as equal, but file names are bytes.
    static func sameBytes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.elementsEqual(rhs.utf8)
    }
}
