import Foundation
import NotesModel
import SQLiteKit

/// A note or folder as it was at the moment a revert goes back to (from the
/// server's history).
public struct PastEntity: Sendable, Hashable {
    public enum Content: Sendable, Hashable {
        case note(NoteContent)
        case folder(FolderContent)
    }

    public var id: UUID
    public var content: Content

    public init(id: UUID, content: Content) {
        self.id = id
        self.content = content
    }
}

/// One change a revert makes, as it is shown before and after.
public struct RevertStep: Sendable, Hashable {
    public enum Action: String, Sendable {
        /// A live note's text, name or folder goes back.
        case edit
        /// A deleted note or folder comes back with the same id.
        case restore
        /// Something this machine never saw comes back as new (a new id).
        case create
        /// Something made after the moment goes to the trash.
        case delete
        /// A folder made after the moment stays: it holds files that are never synced.
        case keep
    }

    public var action: Action
    /// The note or folder (for `create`, the id it had; the new one differs).
    public var id: UUID
    public var isFolder: Bool
    /// The path now (for `restore` and `create`, the path it comes back at).
    public var path: String
    /// For an edit that renames or moves: the path afterwards.
    public var newPath: String?
    public var linesAdded = 0
    public var linesRemoved = 0

    /// One line for the plan and the report.
    public var description: String {
        let what = path + (isFolder ? "/" : "")
        switch action {
        case .edit:
            let move = newPath.map { " -> \($0)\(isFolder ? "/" : "")" } ?? ""
            let lines = isFolder || (linesAdded == 0 && linesRemoved == 0) ? "" : " (+\(linesAdded) -\(linesRemoved) lines)"
            return "change   \(what)\(move)\(lines)"
        case .restore: return "restore  \(what)"
        case .create: return "create   \(what) (as new: this machine never saw it)"
        case .delete: return "delete   \(what)" + (isFolder ? "" : " (to the trash)")
        case .keep: return "keep     \(what) (it holds local-only files)"
        }
    }
}

// `notesfs revert --to TIME [PATH…]`: the notes and folders within the paths
// are made as they were at a past moment, as ordinary local edits (edits,
// undeletes with the same id, deletions into the trash) that sync to every
// machine. Nothing is lost: every text replaced stays in the server's
// history, so a revert is undone by reverting to the moment before it.
extension NotesStore {
    /// How many notes and folders of `past` lie within `paths` (by their paths then).
    public static func pastCount(_ past: [PastEntity], within paths: [String]) -> Int {
        let scope = RevertScope(paths)
        let moment = PastTree(past)
        return moment.notes.keys.filter { scope.contains(moment.path(ofNote: $0)) }.count
            + moment.folders.keys.filter { scope.contains(moment.path(ofFolder: $0)) }.count
    }

    /// What `revert(to:within:)` would do, without doing it.
    func revertPlan(to past: [PastEntity], within paths: [String]) throws(StoreError) -> [RevertStep] {
        try read { db in try self.plannedRevert(db, past: past, within: paths).map(\.step) }
    }

    /// Makes the notes and folders within `paths` (relative to the root;
    /// none: everything) as `past` says they were, in one transaction, and
    /// returns what changed.
    @discardableResult
    func revert(to past: [PastEntity], within paths: [String]) throws(StoreError) -> [RevertStep] {
        try write(origin: .local) { db, commit in
            let planned = try self.plannedRevert(db, past: past, within: paths)
            // A folder made again gets the id its parent and name give it.
            var madeFolders: [FolderID: FolderID] = [:]
            func mapped(_ id: FolderID?) -> FolderID? { id.map { madeFolders[$0] ?? $0 } }
            for (_, operation) in planned {
                switch operation {
                case .putFolder(let id, var folder, let revives):
                    folder.parentID = mapped(folder.parentID)
                    try putFolder(db, id, folder, revives: revives, commit: &commit)
                case .makeFolder(let id, let folder):
                    let directory = try displayDirectory(db, folderID: mapped(folder.parentID))
                    madeFolders[id] = try makeFolder(db, in: directory, name: folder.name, mode: 0o755, commit: &commit)
                case .editNote(let id, var note), .reviveNote(let id, var note):
                    note.folderID = mapped(note.folderID)
                    guard let row = try NoteRow.load(db, id: id) else { continue }
                    if row.deleted {
                        try reviveNote(db, row, content: note, commit: &commit)
                    } else {
                        try editNote(db, row, to: note, commit: &commit)
                    }
                case .insertNote(var note):
                    note.folderID = mapped(note.folderID)
                    try insertNote(db, id: NoteID(newUUID()), content: note, commit: &commit)
                case .deleteNote(let id):
                    if let row = try NoteRow.load(db, id: id), !row.deleted {
                        try deleteNote(db, row, intoTrash: true, commit: &commit)
                    }
                case .deleteFolder(let id):
                    if let row = try FolderRow.load(db, id: id), !row.deleted { try deleteFolder(db, row, commit: &commit) }
                case .none:
                    break
                }
            }
            return planned.map(\.step)
        }
    }

    /// One store change of a revert.
    private enum RevertOperation {
        case putFolder(FolderID, FolderContent, revives: Bool)
        case makeFolder(FolderID, FolderContent)
        case editNote(NoteID, NoteContent)
        case reviveNote(NoteID, NoteContent)
        case insertNote(NoteContent)
        case deleteNote(NoteID)
        case deleteFolder(FolderID)
        case none
    }

    /// The steps of a revert, in the order they apply: notes made after the
    /// moment go to the trash first (a server with a note limit then never
    /// sees more notes than it held at the moment), then folders, parents
    /// first (so notes have somewhere to go), notes, and last the folders
    /// made after the moment that are now empty, deepest first.
    private func plannedRevert(
        _ db: Connection, past: [PastEntity], within paths: [String]
    ) throws -> [(step: RevertStep, operation: RevertOperation)] {
        let scope = RevertScope(paths)
        let moment = PastTree(past)
        var planned: [(step: RevertStep, operation: RevertOperation)] = []
        let liveNotes = try db.query("SELECT id FROM notes WHERE deleted = 0 ORDER BY seq") { NoteID($0.string(0)) }
        for case let id? in liveNotes where moment.notes[id.uuid] == nil {
            guard let path = try currentPath(db, .note(id)), scope.contains(path) else { continue }
            planned.append((RevertStep(action: .delete, id: id.uuid, isFolder: false, path: path), .deleteNote(id)))
        }
        for (id, folder) in moment.foldersByDepth {
            let folderID = FolderID(id)
            guard try scope.contains(moment.path(ofFolder: id)) || scope.contains(currentPath(db, .folder(folderID)))
            else { continue }
            if let change = try folderChange(db, folderID, to: folder, moment: moment) { planned.append(change) }
        }
        for (id, note) in moment.notes.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            let noteID = NoteID(id)
            guard try scope.contains(moment.path(ofNote: id)) || scope.contains(currentPath(db, .note(noteID)))
            else { continue }
            if let change = try noteChange(db, noteID, to: note, moment: moment) { planned.append(change) }
        }
        var lateFolders: [(path: String, id: FolderID)] = []
        for case let id? in try db.query("SELECT id FROM folders WHERE deleted = 0 ORDER BY seq", map: { FolderID($0.string(0)) })
        where moment.folders[id.uuid] == nil {
            if let path = try currentPath(db, .folder(id)), scope.contains(path) { lateFolders.append((path, id)) }
        }
        for (path, id) in lateFolders.sorted(by: { $0.path.count > $1.path.count }) {
            let keepsFiles = try holdsLocalFiles(db, folder: id)
            planned.append((
                RevertStep(action: keepsFiles ? .keep : .delete, id: id.uuid, isFolder: true, path: path),
                keepsFiles ? .none : .deleteFolder(id)
            ))
        }
        return planned
    }

    private func folderChange(
        _ db: Connection, _ id: FolderID, to folder: FolderContent, moment: PastTree
    ) throws -> (step: RevertStep, operation: RevertOperation)? {
        let target = moment.path(ofFolder: id.uuid)
        guard let row = try FolderRow.load(db, id: id) else {
            let sameID = try idMadeAgain(db, id, folder, moment: moment) == id
            return (RevertStep(action: sameID ? .restore : .create, id: id.uuid, isFolder: true, path: target), .makeFolder(id, folder))
        }
        guard row.deleted || row.content != folder else { return nil }
        let operation = RevertOperation.putFolder(id, folder, revives: row.deleted)
        guard !row.deleted, let before = try currentPath(db, .folder(id)) else {
            return (RevertStep(action: .restore, id: id.uuid, isFolder: true, path: target), operation)
        }
        return (RevertStep(action: .edit, id: id.uuid, isFolder: true, path: before, newPath: before == target ? nil : target), operation)
    }

    /// The id a folder gets when the revert applies: its own when this
    /// machine has its row; made again, the id its shown parent and name
    /// give (the one it had, unless it was renamed or its folder went since
    /// it was made). Its shown parent is the folder it was in at the moment
    /// when that folder is here now or comes back with the revert, else the
    /// root, as for any folder whose parent was deleted.
    private func idMadeAgain(_ db: Connection, _ id: FolderID, _ folder: FolderContent, moment: PastTree, depth: Int = 0) throws -> FolderID {
        if try FolderRow.load(db, id: id) != nil { return id }
        var parent: FolderID?
        if let parentID = folder.parentID, depth < 4_096 {
            if let parentFolder = moment.folders[parentID.uuid] {
                parent = try idMadeAgain(db, parentID, parentFolder, moment: moment, depth: depth + 1)
            } else if try FolderRow.load(db, id: parentID).map({ !$0.deleted }) ?? false {
                parent = parentID
            }
        }
        return FolderTree.derivedFolderID(parent: parent, name: folder.name)
    }

    private func noteChange(
        _ db: Connection, _ id: NoteID, to note: NoteContent, moment: PastTree
    ) throws -> (step: RevertStep, operation: RevertOperation)? {
        let target = moment.path(ofNote: id.uuid)
        guard let row = try NoteRow.load(db, id: id) else {
            return (RevertStep(action: .create, id: id.uuid, isFolder: false, path: target), .insertNote(note))
        }
        if row.deleted { return (RevertStep(action: .restore, id: id.uuid, isFolder: false, path: target), .reviveNote(id, note)) }
        guard row.content != note else { return nil }
        let before = try currentPath(db, .note(id)) ?? target
        let (added, removed) = Self.lineChanges(from: row.body, to: note.body)
        return (
            RevertStep(
                action: .edit, id: id.uuid, isFolder: false, path: before, newPath: before == target ? nil : target,
                linesAdded: added, linesRemoved: removed),
            .editNote(id, note)
        )
    }

    /// Sets a folder's name and parent as a local edit, bringing it back when deleted.
    private func putFolder(
        _ db: Connection, _ id: FolderID, _ folder: FolderContent, revives: Bool, commit: inout StoreCommit
    ) throws {
        guard let row = try FolderRow.load(db, id: id) else { return }
        // Checked as the folders move (parents first): a folder and its old
        // child may trade places. A cycle left here means a folder outside
        // the revert's paths now sits below this one.
        if let parent = folder.parentID {
            let cycle = FolderTree.wouldCreateCycle(moving: id, to: parent) { id in
                guard let parent = try? FolderRow.load(db, id: id) else { return nil }
                return .some(parent.parentID)
            }
            if cycle { throw StoreError.wouldCreateCycle(folder.name) }
        }
        try db.run(
            """
            UPDATE folders SET deleted = 0, name = ?, parent_id = ?, updated_ns = ?, local_rev = local_rev + 1
            WHERE seq = ?
            """, folder.name, folder.parentID?.description, now, row.seq)
        try enqueue(db, .folder(id), .put, commit: &commit)
        commit.changedEntries.insert(.folder(id))
        let directory = try displayDirectory(db, folderID: folder.parentID)
        try placeName(db, entry: .folder(id), in: directory, source: folder.name, commit: &commit)
        if revives || row.deleted { try replaceChildren(of: id, db, commit: &commit) }
    }

    /// The path shown now, without the leading slash; nil when not shown.
    private func currentPath(_ db: Connection, _ ref: EntryRef) throws -> String? {
        try path(db, of: ref).map { String($0.drop(while: { $0 == "/" })) }
    }

    /// True when `folder` (made after the moment) holds local-only files
    /// anywhere below it: it stays. Every note and folder in it goes, either
    /// to the trash (made after the moment too) or back where it was then.
    private func holdsLocalFiles(_ db: Connection, folder: FolderID) throws -> Bool {
        let children = try db.query(
            "SELECT entry_kind, entry_id FROM names WHERE parent_key = ?", DirectoryRef.folder(folder).key
        ) { EntryRef(kindCode: $0.string(0), idText: $0.string(1)) }
        for child in children {
            switch child {
            case .local: return true
            case .folder(let id): if try holdsLocalFiles(db, folder: id) { return true }
            case .note, .root, nil: break
            }
        }
        return false
    }

    /// Lines only in `new` and lines only in `old`, counted as multisets.
    static func lineChanges(from old: Data, to new: Data) -> (added: Int, removed: Int) {
        func lines(_ data: Data) -> [Data: Int] {
            var counts: [Data: Int] = [:]
            guard !data.isEmpty else { return counts }
            for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                counts[Data(line), default: 0] += 1
            }
            // The empty piece after a final newline is no line.
            if data.last == UInt8(ascii: "\n") { counts[Data(), default: 0] -= 1 }
            return counts
        }
        let (before, after) = (lines(old), lines(new))
        let added = after.reduce(0) { $0 + max(0, $1.value - (before[$1.key] ?? 0)) }
        let removed = before.reduce(0) { $0 + max(0, $1.value - (after[$1.key] ?? 0)) }
        return (added, removed)
    }
}

/// The paths a revert is limited to (relative, no leading slash; none: everything).
struct RevertScope {
    let paths: [String]

    init(_ paths: [String]) {
        self.paths = paths.map { $0.split(separator: "/").joined(separator: "/") }.filter { !$0.isEmpty }
    }

    func contains(_ path: String?) -> Bool {
        guard let path else { return false }
        guard !paths.isEmpty else { return true }
        return paths.contains { path == $0 || path.hasPrefix($0 + "/") }
    }
}

/// The tree at the moment, with each entity's path as it was shown then.
struct PastTree {
    var notes: [UUID: NoteContent] = [:]
    var folders: [UUID: FolderContent] = [:]

    init(_ past: [PastEntity]) {
        for entity in past {
            switch entity.content {
            case .note(let note): notes[entity.id] = note
            case .folder(let folder): folders[entity.id] = folder
            }
        }
    }

    /// Folders ordered parents first.
    var foldersByDepth: [(UUID, FolderContent)] {
        folders.sorted { (depth($0.key), $0.key.uuidString) < (depth($1.key), $1.key.uuidString) }
            .map { ($0.key, $0.value) }
    }

    private func depth(_ id: UUID) -> Int {
        var depth = 0
        var current = folders[id]?.parentID
        while let parent = current, depth < 4_096 {
            depth += 1
            current = folders[parent.uuid]?.parentID
        }
        return depth
    }

    func path(ofFolder id: UUID) -> String {
        guard let folder = folders[id] else { return "" }
        return path(in: folder.parentID, name: folder.name, seen: [id])
    }

    func path(ofNote id: UUID) -> String {
        guard let note = notes[id] else { return "" }
        return path(in: note.folderID, name: note.title, seen: [])
    }

    private func path(in parent: FolderID?, name: String, seen: Set<UUID>) -> String {
        var components = [NameCodec.displayName(forTitle: name, inRoot: parent == nil)]
        var current = parent
        var seen = seen
        while let id = current, let folder = folders[id.uuid], seen.insert(id.uuid).inserted {
            components.append(NameCodec.displayName(forTitle: folder.name, inRoot: folder.parentID == nil))
            current = folder.parentID
        }
        return components.reversed().joined(separator: "/")
    }
}
