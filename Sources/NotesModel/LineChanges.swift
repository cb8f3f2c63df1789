import Foundation

/// How many lines one text adds and removes relative to another, as a
/// `diff` would count them (lines split on `\n`).
public struct LineChanges: Hashable, Sendable {
    public var added: Int
    public var removed: Int

    public init(added: Int, removed: Int) {
        self.added = added
        self.removed = removed
    }

    /// The lines `new` adds to and removes from `old`.
    public static func between(old: Data, new: Data) -> LineChanges {
        old.withUnsafeBytes { oldBytes in
            new.withUnsafeBytes { newBytes in
                let oldTable = LineTable(oldBytes)
                let newTable = LineTable(newBytes)
                let kept = LineDiff.keptLines(from: oldTable, to: newTable).filter { $0 >= 0 }.count
                return LineChanges(added: newTable.count - kept, removed: oldTable.count - kept)
            }
        }
    }
}
