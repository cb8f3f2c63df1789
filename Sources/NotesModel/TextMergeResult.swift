import Foundation

/// Result of a line-level three-way merge of bytes.
public enum TextMergeResult: Equatable, Sendable {
    /// Both sides' changes combined.
    case merged(Data)
    /// The sides changed the same lines differently; nothing was combined.
    case clash
}
