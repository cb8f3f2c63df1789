import Foundation
import NotesModel
import NotesStore
import SyncProtocol

/// Conversions between the store's sync values and the wire types (used by the
/// engine, and by the simulation for the pushes it makes by hand).
public enum WireMapping {
    /// The push of a frozen batch, with the store's cursor so that a server
    /// restored since answers `410` before applying anything.
    public static func pushRequest(_ batch: [OutgoingChange], device: DeviceID, cursor: String?) -> PushRequest {
        PushRequest(device: device, changes: batch.map(change), cursor: cursor.map(SyncCursor.init(rawValue:)))
    }

    /// Where a push reply moves the cursor the push was sent with: past the
    /// push when the server says nothing else happened since, else to the
    /// epoch's start when there was no cursor yet.
    public static func cursorAdvance(after response: PushResponse, sentWith cursor: String?) -> CursorAdvance? {
        if let next = response.nextCursor { return CursorAdvance(expected: cursor, new: next.rawValue) }
        guard cursor == nil, let start = response.startCursor else { return nil }
        return CursorAdvance(expected: nil, new: start.rawValue)
    }

    /// The wire form of a frozen outbox change.
    public static func change(_ outgoing: OutgoingChange) -> Change {
        Change(
            changeId: outgoing.changeID, kind: outgoing.kind, id: outgoing.ref.id, op: outgoing.operation,
            baseVersion: outgoing.baseVersion,
            note: outgoing.isDelete ? nil : outgoing.note.map(NotePayload.init),
            folder: outgoing.isDelete ? nil : outgoing.folder.map(FolderPayload.init))
    }

    /// Nil when a note body cannot be decoded (the row is treated as unreadable).
    public static func remote(_ version: EntityVersion) -> RemoteEntity? {
        var entity = RemoteEntity(version.ref, version: version.version, deleted: version.deleted)
        if !version.deleted {
            switch version.kind {
            case .note:
                guard let content = version.note?.content() else { return nil }
                entity.note = content
            case .folder:
                guard let folder = version.folder else { return nil }
                entity.folder = FolderContent(name: folder.name, parentID: folder.parentId)
            }
        }
        return entity
    }

    /// The store's form of one push result; nil when its row is unreadable.
    public static func outcome(_ outcome: ChangeResult.Outcome) -> ChangeOutcome? {
        switch outcome {
        case .applied(let version):
            return .applied(version: version)
        case .conflict(let current):
            guard let current else { return .conflict(current: nil) }
            guard let remote = remote(current) else { return nil }
            return .conflict(current: remote)
        case .refused(let reason, let message):
            return .refused(reason: "\(reason.rawValue): \(message)")
        }
    }
}
