import Foundation
import NotesModel

/// A frozen outbox change, ready to send. Resending it sends exactly this,
/// with the same change id, until the server answers.
public struct OutgoingChange: Sendable, Equatable {
    public var changeID: ChangeID
    /// The note or folder it changes.
    public var ref: EntityRef
    public var operation: ChangeOperation
    /// The server version this change was made on; nil = "must not exist yet".
    public var baseVersion: Int64?
    /// The note's payload for a note put.
    public var note: NoteContent?
    /// The folder's payload for a folder put.
    public var folder: FolderContent?
    /// How many times this change was sent before.
    public var attempts: Int

    public var kind: EntityKind { ref.kind }
    public var isDelete: Bool { operation == .delete }

    /// Bytes of payload, for packing pushes by size.
    public var payloadBytes: Int {
        (note.map { $0.body.count + $0.title.utf8.count } ?? 0) + (folder.map { $0.name.utf8.count } ?? 0) + 128
    }
}

/// An entity's state on the server, as pulled or returned in a conflict.
public struct RemoteEntity: Sendable, Equatable {
    public var ref: EntityRef
    public var version: Int64
    public var deleted: Bool
    public var note: NoteContent?
    public var folder: FolderContent?

    public init(
        _ ref: EntityRef, version: Int64, deleted: Bool, note: NoteContent? = nil, folder: FolderContent? = nil
    ) {
        self.ref = ref
        self.version = version
        self.deleted = deleted
        self.note = note
        self.folder = folder
    }

    public var kind: EntityKind { ref.kind }
}

/// The server's answer to one change.
public enum ChangeOutcome: Sendable, Equatable {
    case applied(version: Int64)
    /// The base was stale; `current` is the server's row (nil = unknown to the server).
    case conflict(current: RemoteEntity?)
    /// The change can never apply (a folder cycle, a too-large note).
    case refused(reason: String)
}

/// What applying one pulled page did.
public struct PullReport: Sendable, Equatable {
    public var applied = 0
    public var skippedDirty = 0
    public var skippedEcho = 0
    /// Tombstones the mass-delete guard kept aside instead of applying.
    public var heldDeletions = 0
    /// Deletions of notes this machine never had (made and deleted elsewhere
    /// between two of its syncs): their last text can come from the server's
    /// history into the trash (`trashFromServerHistory`).
    public var unseenDeletedNotes: [UnseenDeletion] = []
    public init() {}
}

/// A pulled deletion of a note this machine never had.
public struct UnseenDeletion: Sendable, Hashable {
    public var id: NoteID
    /// The tombstone's version.
    public var version: Int64

    public init(id: NoteID, version: Int64) {
        self.id = id
        self.version = version
    }
}

/// What settling one answered change did.
public struct SettleReport: Sendable, Equatable {
    /// A conflict copy was made (its id).
    public var conflictCopy: NoteID?
    /// The merge result is queued to be sent on the server's version.
    public var requeued = false
    /// The local text of a refused change was kept as this local-only file name.
    public var keptAs: String?

    public init() {}
}

/// A move of the sync cursor that comes with settling a push: to `new`, and
/// only if the cursor is still `expected` (nothing was pulled meanwhile).
///
/// A push reply gives the start of the server's epoch to a store that has no
/// cursor yet, so its versions are tied to that epoch and a later restore of
/// the server reaches it as `410`; and gives the cursor past the push when
/// nothing else happened since ours, so the store need not pull its own
/// changes back.
public struct CursorAdvance: Sendable, Equatable {
    public var expected: String?
    public var new: String

    public init(expected: String?, new: String) {
        self.expected = expected
        self.new = new
    }
}
