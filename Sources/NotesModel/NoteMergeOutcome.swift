/// What a conflict on one note settles to.
public struct NoteMergeOutcome: Equatable, Sendable {
    /// The note's state after the merge; nil = it stays deleted.
    public var result: NoteContent?
    /// The local version to keep as a conflict copy when bodies clashed (its own title/folder
    /// as the local side had them), else nil.
    public var conflictCopy: NoteContent?

    /// An outcome; no conflict copy unless one is given.
    public init(result: NoteContent?, conflictCopy: NoteContent? = nil) {
        self.result = result
        self.conflictCopy = conflictCopy
    }
}
