import Foundation
import NotesModel

/// A deleted note kept in the trash with its last text, and where it is shown.
public struct TrashEntry: Hashable, Sendable {
    /// The entry's number (ordered by when it went to the trash).
    public var seq: Int64
    /// The note's id: restoring brings back this same note.
    public var noteID: NoteID
    /// The note's path from the mount root when it was deleted, without a
    /// leading `/`, as it was shown (folders by their shown names).
    public var path: String
    public var size: Int64
    public var deletedNanoseconds: Int64
    public var origin: TrashOrigin

    public init(
        seq: Int64, noteID: NoteID, path: String, size: Int64, deletedNanoseconds: Int64, origin: TrashOrigin
    ) {
        self.seq = seq
        self.noteID = noteID
        self.path = path
        self.size = size
        self.deletedNanoseconds = deletedNanoseconds
        self.origin = origin
    }

    /// The folder path the note was in ("" for the root).
    public var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// The note's file name when it was deleted.
    public var fileName: String {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        return name.isEmpty ? NameCodec.untitledName : name
    }

    /// The name it is shown under when another entry or a folder in the
    /// trash has its plain name: when it was deleted and the entry's number,
    /// before the extension, as history entries are named:
    /// `plan (deleted 2025-01-05 14.03.22 #17).md`. Local time.
    public var distinctName: String {
        let (stem, ext) = NameParts.split(fileName)
        let insert = " (deleted \(HistoryEntry.localTime(deletedNanoseconds)) #\(seq))"
        return NameParts.fit(stem: stem, insert: insert, ext: ext, bytesMax: NameCodec.maxNameBytes)
    }

    /// When it was deleted, as `2025-01-05 14:03:22` in local time.
    public var deletedAtText: String {
        HistoryEntry.localTime(deletedNanoseconds).replacingOccurrences(of: ".", with: ":")
    }
}

/// Where a note in the trash was deleted. Each source of entries has its own
/// case, so the trash can later also hold notes this machine learns of from
/// elsewhere (a server's history) beside those it saw deleted.
public enum TrashOrigin: Hashable, Sendable {
    /// Deleted on this machine (`rm`, a folder removed with its notes, a
    /// move to a local-only name).
    case deletedHere
    /// Deleted on another machine; the deletion was pulled here.
    case deletedElsewhere
    /// A deletion from before this machine kept a trash (found at upgrade).
    case unknown

    init(stored: String) {
        switch stored {
        case "here": self = .deletedHere
        case "elsewhere": self = .deletedElsewhere
        default: self = .unknown
        }
    }

    var stored: String {
        switch self {
        case .deletedHere: "here"
        case .deletedElsewhere: "elsewhere"
        case .unknown: "unknown"
        }
    }

    /// How listings say it.
    public var words: String {
        switch self {
        case .deletedHere: "this machine"
        case .deletedElsewhere: "another machine"
        case .unknown: "unknown"
        }
    }
}

/// What a name in a trash folder stands for.
public enum TrashNode: Hashable, Sendable {
    /// A folder of the trash: notes were deleted from under this path.
    case directory(path: String)
    case note(TrashEntry)
}

/// Where a restored note goes.
public enum TrashDestination: Hashable, Sendable {
    /// Back where it was deleted from: its folder, made again along its old
    /// path when that is gone, under its own title.
    case original
    /// Into this directory under this name (`mv` out of `.notesfs/trash`).
    /// The entry's own name there (plain or distinct) keeps the note's title.
    case at(DirectoryRef, name: String)
}

/// The trash shown as a tree: folders from the entries' paths, each entry
/// under its file name. Of the entries with one path, the newest deleted
/// shows under the plain name (unless a trash folder has that name); the
/// others under their distinct names.
public enum TrashTree {
    /// A folder's contents: subfolder names, and entries by shown name, both sorted.
    public struct Listing: Sendable {
        public var directories: [String] = []
        public var notes: [(name: String, entry: TrashEntry)] = []
    }

    /// The contents of the trash folder `directory` ("" is the trash itself),
    /// given every entry under it (entries elsewhere are ignored).
    public static func listing(of directory: String, entries: [TrashEntry]) -> Listing {
        let prefix = directory.isEmpty ? "" : directory + "/"
        var directories = Set<String>()
        var byName: [String: [TrashEntry]] = [:]
        for entry in entries where entry.path.hasPrefix(prefix) {
            let rest = entry.path.dropFirst(prefix.count)
            if let slash = rest.firstIndex(of: "/") {
                directories.insert(String(rest[..<slash]))
            } else if entry.directory == directory {
                byName[entry.fileName, default: []].append(entry)
            }
        }
        var listing = Listing()
        listing.directories = directories.sorted()
        for (name, group) in byName {
            for entry in group {
                listing.notes.append(
                    (shownName(of: entry, among: group, folderHasName: directories.contains(name)), entry))
            }
        }
        listing.notes.sort { $0.name < $1.name }
        return listing
    }

    /// Each entry's path as the trash shows it (its folder and shown name).
    public static func shownPaths(_ entries: [TrashEntry]) -> [Int64: String] {
        var directories = Set<String>()
        for entry in entries {
            var directory = entry.directory
            while !directory.isEmpty, directories.insert(directory).inserted {
                directory = directory.lastIndex(of: "/").map { String(directory[..<$0]) } ?? ""
            }
        }
        var shown: [Int64: String] = [:]
        for group in Dictionary(grouping: entries, by: \.path).values {
            for entry in group {
                let name = shownName(of: entry, among: group, folderHasName: directories.contains(entry.path))
                shown[entry.seq] = entry.directory.isEmpty ? name : entry.directory + "/" + name
            }
        }
        return shown
    }

    /// The name `entry` is shown under, given every entry with its path and
    /// whether a trash folder has that path too.
    public static func shownName(of entry: TrashEntry, among samePath: [TrashEntry], folderHasName: Bool) -> String {
        let newest = samePath.max { ($0.deletedNanoseconds, $0.seq) < ($1.deletedNanoseconds, $1.seq) }
        return !folderHasName && newest?.seq == entry.seq ? entry.fileName : entry.distinctName
    }
}
