import Foundation
import FuseKit

extension ControlDirectory.Node {
    /// True for `.notesfs/at`, its README and everything in a moment.
    var isInMoments: Bool {
        switch self {
        case .at, .atReadme, .moment: true
        default: false
        }
    }
}

extension ControlDirectory {
    /// True when `inode` is `.notesfs/at` or inside it.
    static func isInMoments(_ inode: UInt64) -> Bool {
        node(forInode: inode)?.isInMoments ?? false
    }
}

// A past moment is read-only: every change in `.notesfs/at` fails with
// EROFS and reaches nothing in the store.
extension NotesFileSystem {
    static let readOnly = FileSystemError(EROFS)

    /// Throws EROFS when any of `inodes` is `.notesfs/at` or inside it.
    func refuseChangeInMoments(_ inodes: UInt64...) throws {
        for inode in inodes where ControlDirectory.isInMoments(inode) { throw Self.readOnly }
    }
}
