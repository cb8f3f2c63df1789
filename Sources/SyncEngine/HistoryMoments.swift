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
}

extension HistoryTransport {
    /// The notes and folders live at `at` in the server's history, with
    /// their text, and from when that history is whole.
    public func momentItems(at: Date) async throws(TransportError) -> (items: [MomentItem], keptSince: Date?) {
        let listing = try await wholeTree(at: at)
        return (listing.items.compactMap(MomentItem.init), listing.keptSince)
    }
}
