import Foundation
import NotesModel
import NotesStore
import SyncProtocol

extension MomentItem {
    /// A note or folder of the server's tree at a moment; nil for a
    /// tombstone or an entry without its content.
    public init?(_ entity: HistoricEntity) {
        guard !entity.deleted else { return nil }
        let modified = Int64((entity.time.timeIntervalSince1970 * 1e9).rounded(.down))
        switch entity.kind {
        case .note:
            guard let note = entity.note, let bytes = note.bodyBytes() else { return nil }
            self.init(
                kind: .note, id: entity.id, name: note.title, parentID: note.folderId?.uuid,
                size: Int64(bytes.count), modifiedNanoseconds: modified, body: .text(bytes))
        case .folder:
            guard let folder = entity.folder else { return nil }
            self.init(
                kind: .folder, id: entity.id, name: folder.name, parentID: folder.parentId?.uuid, size: 0,
                modifiedNanoseconds: modified, body: nil)
        }
    }

    /// A note or folder of the server's tree without text: a note's text is
    /// its version on the server, fetched when read; its size is the server's.
    public init(_ entry: TreeSummaryEntry) {
        self.init(
            kind: entry.kind == .note ? .note : .folder, id: entry.id, name: entry.name, parentID: entry.parentId,
            size: entry.kind == .note ? entry.size : 0,
            modifiedNanoseconds: Int64((entry.time.timeIntervalSince1970 * 1e9).rounded(.down)),
            body: entry.kind == .note ? .server(version: entry.version) : nil)
    }
}

/// A note's text fetched from the server's tree of a moment.
public struct MomentTextOnServer: Sendable {
    public var id: NoteID
    public var version: Int64
    public var text: Data
}

extension HistoryTransport {
    /// The notes and folders live at `at` in the server's history, and from
    /// when that history is whole. Notes come without their text
    /// (`MomentBody.server`, fetched with `momentText`) when the server can
    /// list the tree so; a server from before that answers 400 to the
    /// question and the tree comes with every note's text.
    public func momentItems(at: Date) async throws(TransportError) -> (items: [MomentItem], keptSince: Date?) {
        do throws(TransportError) {
            let listing = try await wholeTreeSummary(at: at)
            return (listing.items.map(MomentItem.init), listing.keptSince)
        } catch .rejected(status: 400, _, _) {
            let listing = try await wholeTree(at: at)
            return (listing.items.compactMap(MomentItem.init), listing.keptSince)
        }
    }

    /// The text of `note` at `version`; nil when the server no longer keeps
    /// that version (trimmed).
    public func momentText(of note: NoteID, version: Int64) async throws(TransportError) -> Data? {
        guard let entity = try await self.version(of: .note(note), version: version) else { return nil }
        guard entity.kind == .note, entity.id == note.uuid, entity.version == version, !entity.deleted,
            let payload = entity.note
        else {
            throw .serverBroke("asked for version \(version) of note \(note), the server answered another entity")
        }
        guard let bytes = payload.bodyBytes() else {
            throw .serverBroke("version \(version) of note \(note) has a body that is not valid base64")
        }
        return bytes
    }

    /// Hands the text of every note in the tree at `at` to `receive`, a page
    /// at a time, in (kind, id) order.
    public func forEachMomentText(at: Date, _ receive: ([MomentTextOnServer]) -> Void) async throws(TransportError) {
        try await forEachTreePage(at: at) { page in
            receive(
                page.entries.compactMap { entity in
                    guard entity.kind == .note, !entity.deleted, let bytes = entity.note?.bodyBytes() else { return nil }
                    return MomentTextOnServer(id: NoteID(entity.id), version: entity.version, text: bytes)
                })
        }
    }
}
