import Foundation
import FuseKit
import NotesStore

/// The one place where errors become errno values for the kernel.
enum ErrnoMapping {
    static func code(for error: any Error) -> Int32 {
        switch error {
        case let error as FileSystemError:
            return error.errno
        case let error as StoreError:
            return code(for: error)
        default:
            return EIO
        }
    }

    static func code(for error: StoreError) -> Int32 {
        switch error {
        case .notFound: ENOENT
        case .alreadyExists: EEXIST
        case .notEmpty: ENOTEMPTY
        case .notADirectory: ENOTDIR
        case .isADirectory: EISDIR
        case .tooLarge: EFBIG
        case .invalidName: EINVAL
        case .crossesLocalOnlyLine: EXDEV
        case .wouldCreateCycle: EINVAL
        case .notPermitted: EPERM
        case .diskFull: ENOSPC
        case .newerSchema: EIO
        case .syncMismatch: EIO
        case .damaged: EIO
        case .busy: EBUSY
        // The store turns SQLite's and a local file's "disk full" into `.diskFull`.
        case .database, .localFile: EIO
        }
    }
}

/// How long the kernel may cache names and attributes. Changes made behind
/// the kernel's back (sync) are invalidated explicitly, so these can be long
/// enough to make a warm `grep -r` fast.
enum CacheTimeouts {
    static let entrySeconds = 10.0
    static let attributeSeconds = 10.0
    /// Control files are generated on every read: their attributes (the
    /// size of what a read would return now) are never cached, and their
    /// mtime moves on every getattr, so the kernel drops their pages.
    static let controlAttributeSeconds = 0.0

    /// Generated control files get `controlAttributeSeconds`; the control
    /// directories, history and trash entries, which do not change under a
    /// reader, get the usual timeout: a path walk into `.notesfs/history`
    /// checks both directories' permissions, and with timeout 0 that was two
    /// getattr round trips per entry of an `ls -l`.
    static func attributeSeconds(of inode: UInt64) -> Double {
        switch ControlDirectory.node(forInode: inode) {
        case nil, .root?, .history?, .historyItem?, .trash?, .trashDirectory?, .trashItem?, .at?, .moment?:
            attributeSeconds
        default: controlAttributeSeconds
        }
    }

    /// Names inside the trash are looked up again at every path walk: one
    /// moved out (a restore) keeps the trash's inode at its new name in the
    /// kernel until the name is looked up, which then finds the note.
    static func entrySeconds(of inode: UInt64) -> Double {
        switch ControlDirectory.node(forInode: inode) {
        case .trashDirectory?, .trashItem?: 0
        // A moment's name finds a tree built again when its lifetime is
        // over; names inside it keep pointing into the tree they were found in.
        case .moment(_, 0)?: 1
        default: entrySeconds
        }
    }
    /// Negative lookups (name not found) are cached briefly.
    static let negativeEntrySeconds = 1.0

    /// An entry the kernel may cache for the usual timeouts.
    static func entryReply(_ attributes: FileAttributes) -> EntryReply {
        EntryReply(
            attributes: attributes, generation: 1, entryTimeoutSeconds: entrySeconds,
            attributeTimeoutSeconds: attributeSeconds)
    }

    /// A negative entry: the kernel caches "no such name" briefly.
    static func negativeEntryReply() -> EntryReply {
        EntryReply(
            attributes: FileAttributes(
                inode: 0, kind: .regular, size: 0, permissions: 0, uid: 0, gid: 0, accessTimeNanoseconds: 0,
                modificationTimeNanoseconds: 0, changeTimeNanoseconds: 0),
            generation: 0, entryTimeoutSeconds: negativeEntrySeconds, attributeTimeoutSeconds: 0)
    }
}
