import Foundation
import FuseKit
import NotesStore

extension ControlDirectory.Node {
    /// True for a note or folder shown inside `.notesfs/trash`.
    var isInTrash: Bool {
        switch self {
        case .trashItem, .trashDirectory: true
        default: false
        }
    }
}

// Moving a note (or a folder) out of `.notesfs/trash` restores it: the same
// note, with its last text, at the name the move gives in the notes.
extension FileSystemRouter {
    func moveOutOfTrash(_ source: ControlDirectory.Node, name: String, newParent: UInt64, newName: String) throws {
        // Within the control directory (or into it) nothing moves.
        if ControlFileSystem.owns(parent: newParent, name: newName) { throw FileSystemError.notPermitted }
        let to = try notes.directory(newParent)
        switch source {
        case .trashItem(let seq):
            let id = try notes.tree.trash.restore(seq, to: .at(to, name: newName))
            notes.log.info("restored note \(id) from the trash ('\(name)' moved out as '\(newName)')")
        case .trashDirectory(let number):
            guard let path = control.directory.trashDirectories.path(number) else { throw FileSystemError.notFound }
            let ids = try notes.tree.trash.restoreDirectory(path, to: .at(to, name: newName))
            notes.log.info("restored \(ids.count) notes from the trash folder '\(path)' (moved out as '\(newName)')")
        default:
            throw FileSystemError.notPermitted
        }
        // The kernel now shows the trash entry's inode at the new name; its
        // entry expires at once (`CacheTimeouts.entrySeconds(of:)`), so the
        // next path walk looks the name up and finds the note.
    }
}
