import Foundation

/// The line ending a merge adds to a text whose last line has none.
enum LineEnding {
    /// The text with its last line terminated, and how many bytes that added.
    static func terminated(_ data: Data, fallback: [UInt8]) -> (bytes: Data, addedEnding: Int) {
        guard let last = data.last, last != 0x0A else { return (data, 0) }
        let ending = own(data) ?? fallback
        var bytes = Data(capacity: data.count + ending.count)
        bytes.append(data)
        bytes.append(contentsOf: ending)
        return (bytes, ending.count)
    }

    /// The ending of the last terminated line of the first text that has one, else \n.
    static func fallback(_ texts: Data...) -> [UInt8] {
        for text in texts { if let ending = own(text) { return ending } }
        return [0x0A]
    }

    /// The ending of `data`'s last terminated line: \r\n or \n; nil with no newline.
    static func own(_ data: Data) -> [UInt8]? {
        guard let newline = data.lastIndex(of: 0x0A) else { return nil }
        return newline > data.startIndex && data[data.index(before: newline)] == 0x0D ? [0x0D, 0x0A] : [0x0A]
    }

    /// Whether the merged text ends unterminated, by the side-that-changed
    /// rule over the three texts' last lines; the bytes to take off if so.
    static func mergedAddedEnding(_ base: TextMerge.Side, _ local: TextMerge.Side, _ remote: TextMerge.Side) -> Int {
        let (inBase, inLocal, inRemote) = (base.addedEnding > 0, local.addedEnding > 0, remote.addedEnding > 0)
        let unterminated = inBase == inRemote ? inLocal : inRemote
        guard unterminated else { return 0 }
        return max(base.addedEnding, local.addedEnding, remote.addedEnding)
    }
}
