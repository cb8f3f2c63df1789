import Foundation
import NotesModel

/// A directory in the tree: the root, a synced folder, or a local-only directory.
public enum DirectoryRef: Hashable, Sendable, CustomStringConvertible {
    case root
    case folder(FolderID)
    case local(Int64)

    /// The key stored in the `names` table.
    var key: String {
        switch self {
        case .root: "r"
        case .folder(let id): "f:" + UUIDText.format(id.uuid)
        case .local(let seq): "l:\(seq)"
        }
    }

    init?(key: String) {
        if key == "r" {
            self = .root
        } else if key.hasPrefix("f:"), let uuid = UUIDText.parse(String(key.dropFirst(2))) {
            self = .folder(FolderID(uuid))
        } else if key.hasPrefix("l:"), let seq = Int64(key.dropFirst(2)) {
            self = .local(seq)
        } else {
            return nil
        }
    }

    /// The same directory as an entry.
    public var entry: EntryRef {
        switch self {
        case .root: .root
        case .folder(let id): .folder(id)
        case .local(let seq): .local(seq)
        }
    }

    /// True inside local-only territory, where nothing syncs.
    public var isLocalOnly: Bool {
        if case .local = self { return true }
        return false
    }

    public var description: String { key }
}

/// Anything the mount can show: the root, a folder, a note, or a local-only entry.
public enum EntryRef: Hashable, Sendable, CustomStringConvertible {
    case root
    case folder(FolderID)
    case note(NoteID)
    case local(Int64)

    var kindCode: String {
        switch self {
        case .root: "root"
        case .folder: "folder"
        case .note: "note"
        case .local: "local"
        }
    }

    var idText: String {
        switch self {
        case .root: ""
        case .folder(let id): UUIDText.format(id.uuid)
        case .note(let id): UUIDText.format(id.uuid)
        case .local(let seq): String(seq)
        }
    }

    /// The same, from a row's bytes without making strings (listings decode
    /// every entry this way).
    init?(kindCode: UnsafeBufferPointer<UInt8>, idText: UnsafeBufferPointer<UInt8>) {
        if kindCode.elementsEqual("note".utf8) {
            guard let uuid = UUIDText.parse(bytes: idText) else { return nil }
            self = .note(NoteID(uuid))
        } else if kindCode.elementsEqual("folder".utf8) {
            guard let uuid = UUIDText.parse(bytes: idText) else { return nil }
            self = .folder(FolderID(uuid))
        } else {
            self.init(
                kindCode: String(decoding: kindCode, as: UTF8.self), idText: String(decoding: idText, as: UTF8.self))
        }
    }

    init?(kindCode: String, idText: String) {
        switch kindCode {
        case "root": self = .root
        case "folder": guard let uuid = UUIDText.parse(idText) else { return nil }; self = .folder(FolderID(uuid))
        case "note": guard let uuid = UUIDText.parse(idText) else { return nil }; self = .note(NoteID(uuid))
        case "local": guard let seq = Int64(idText) else { return nil }; self = .local(seq)
        default: return nil
        }
    }

    /// The entry a synced entity is shown as.
    public init(_ entity: EntityRef) {
        switch entity.kind {
        case .note: self = .note(NoteID(entity.id))
        case .folder: self = .folder(FolderID(entity.id))
        }
    }

    /// This entry as a directory, when it can be one.
    public var directory: DirectoryRef? {
        switch self {
        case .root: .root
        case .folder(let id): .folder(id)
        case .local(let seq): .local(seq)
        case .note: nil
        }
    }

    public var description: String { idText.isEmpty ? kindCode : "\(kindCode):\(idText)" }
}

/// What sort of file system object an entry is.
public enum EntryKind: Int, Sendable {
    case directory = 1
    case file = 2
    case symlink = 3
}

/// An entry as the mount shows it.
public struct Entry: Hashable, Sendable {
    public var ref: EntryRef
    /// The name shown in its directory (empty for the root).
    public var name: String
    /// The directory it is listed in (nil for the root).
    public var parent: DirectoryRef?
    public var kind: EntryKind
    public var size: Int64
    /// Modification time, nanoseconds since 1970.
    public var modifiedNanoseconds: Int64
    /// Permission bits (e.g. 0o644).
    public var mode: UInt32
    /// A stable readdir cookie within its directory.
    public var cookie: Int64
    /// For a directory, the subdirectories listed in it (its link count is 2 more).
    public var subdirectories: Int = 0
    /// The ctime and atime kept on this machine (never synced).
    public var localTimes = LocalTimes()
    /// The entry's inode number as a listing read it; nil when it has none
    /// yet or was not read with one (lookups, attributes).
    public var inode: UInt64? = nil

    /// Status change time (ctime), nanoseconds since 1970.
    public var changedNanoseconds: Int64 { localTimes.changed(modified: modifiedNanoseconds) }
    /// Access time (atime), nanoseconds since 1970.
    public var accessedNanoseconds: Int64 { localTimes.accessedNanoseconds ?? modifiedNanoseconds }
}

/// An entry's ctime and atime as recorded on this machine; an entry with
/// nothing recorded shows its mtime for both.
public struct LocalTimes: Hashable, Sendable {
    /// The ctime recorded, while the mtime was `changedAtModifiedNanoseconds`.
    var changedNanoseconds: Int64?
    var changedAtModifiedNanoseconds: Int64?
    /// The atime set by `utimensat`; nil follows the mtime.
    var accessedNanoseconds: Int64?

    init(
        changedNanoseconds: Int64? = nil, changedAtModifiedNanoseconds: Int64? = nil, accessedNanoseconds: Int64? = nil
    ) {
        self.changedNanoseconds = changedNanoseconds
        self.changedAtModifiedNanoseconds = changedAtModifiedNanoseconds
        self.accessedNanoseconds = accessedNanoseconds
    }

    /// The ctime for an entry whose mtime is `modified`. Until the mtime moves
    /// it is what was recorded (which may be before an mtime set into the
    /// future); a write since then (the mtime moved, unrecorded) happened
    /// after the record, so the later of the two.
    func changed(modified: Int64) -> Int64 {
        guard let changedNanoseconds else { return modified }
        if modified == changedAtModifiedNanoseconds { return changedNanoseconds }
        return max(changedNanoseconds, modified)
    }
}

/// Sync bookkeeping of one note or folder, for `user.notesfs.*` and status.
public enum SyncState: String, Sendable {
    case synced
    case pending
    case refused
    case conflictCopy = "conflict-copy"
    case local
}

/// A clock in nanoseconds since 1970, injected so tests and the simulation control time.
public struct StoreClock: Sendable {
    public var nowNanoseconds: @Sendable () -> Int64

    public init(nowNanoseconds: @escaping @Sendable () -> Int64) {
        self.nowNanoseconds = nowNanoseconds
    }

    /// The system clock.
    public static let system = StoreClock {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

/// What one commit changed, handed to observers after it is durable in the WAL.
public struct StoreCommit: Sendable {
    /// Why the commit happened.
    public enum Origin: Sendable, Equatable {
        /// A local edit (the mount, import, restore).
        case local
        /// Applied from the server (pull, settle).
        case remote
    }

    public var origin: Origin
    /// Entries whose content or attributes changed.
    public var changedEntries: Set<EntryRef> = []
    /// Entries among them changed behind the kernel even when the commit
    /// serves a kernel request (a conflict copy a write to its note updated).
    public var changedBehindRequest: Set<EntryRef> = []
    /// Names that disappeared from a directory (renamed, deleted, suffixed).
    public var removedNames: [DirectoryName] = []
    /// Names that appeared in a directory.
    public var addedNames: [DirectoryName] = []
    /// Directories whose entries changed, with the time now their mtime and
    /// ctime (never a synced change).
    public var directoriesModified: [DirectoryRef: Int64] = [:]
    /// True when the outbox gained work (wakes the sync engine).
    public var outboxChanged = false
    /// True when a note the server already has was changed (pushed at once on close or fsync).
    public var touchedSyncedNote = false
    /// Sent changes the server's answers settled: text that was only this
    /// machine's is now the server's too (nothing visible changes when applied).
    public var settledChanges = 0
    /// Entries made in this commit whose mtime is the moment they were made:
    /// their ctime is that mtime, so naming them records no time of its own.
    var madeAtTheirMtime: [EntryRef] = []

    public init(origin: Origin) { self.origin = origin }

    public var isEmpty: Bool {
        changedEntries.isEmpty && removedNames.isEmpty && addedNames.isEmpty && !outboxChanged && settledChanges == 0
    }
}

/// A name in a directory, as reported in `StoreCommit`.
public struct DirectoryName: Hashable, Sendable {
    public var directory: DirectoryRef
    public var name: String
    public var entry: EntryRef
    /// True when the entry is (or, unknown, may be) a directory: its parent's
    /// link count counts it. A local-only file's name says false.
    public var isDirectory: Bool

    public init(directory: DirectoryRef, name: String, entry: EntryRef, isDirectory: Bool) {
        self.directory = directory
        self.name = name
        self.entry = entry
        self.isDirectory = isDirectory
    }
}
