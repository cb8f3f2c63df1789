import Foundation
import NotesModel
import NotesStore

/// An entry as a device sees it.
struct SimItem {
    var ref: EntryRef
    var name: String
    var parent: DirectoryRef
    var kind: EntryKind
}

/// Thrown to stop a multi-step save when the device crashes between its transactions.
struct SimCrash: Error {}

// What people (and their editors) do to notes, through the store's file
// operations — the same calls the mount makes.
extension SimWorld {
    static let titles = ["todo.md", "plan.md", "notes.txt", "ideas", "log.md", "a b.md", "Read me"]
    static let folderNames = ["Work", "Home", "Archive", "Projects", "x"]

    func tree(_ store: NotesStore) throws -> [SimItem] {
        var items: [SimItem] = []
        var queue: [DirectoryRef] = [.root]
        while let directory = queue.popLast(), items.count < 5_000 {
            for entry in try store.tree.list(directory: directory) {
                items.append(SimItem(ref: entry.ref, name: entry.name, parent: directory, kind: entry.kind))
                if entry.kind == .directory, let inner = entry.ref.directory { queue.append(inner) }
            }
        }
        return items
    }

    func newLines(_ count: Int) -> [String] {
        (0..<count).map { _ in
            let token = nextToken
            nextToken += 1
            return SimText.line(token: token, words: random.int(0...3), random: &random)
        }
    }

    /// Marks the tokens of `data` as written (the store call that wrote them succeeded).
    func wrote(_ data: Data) {
        written.formUnion(SimText.tokens(data))
    }

    /// Marks tokens a device saw and removed on purpose.
    func removedOnPurpose(_ old: Data, keeping new: Data = Data()) {
        removed.formUnion(SimText.tokens(old).subtracting(SimText.tokens(new)))
    }

    /// A crash between two transactions of a multi-step save.
    func maybeCrashMidSave(_ device: SimDevice) throws {
        guard faultsEnabled, random.chance(configuration.crashRate) else { return }
        kernelState.crashCut.formUnion(kernelState.savingTokens)
        count(.crashMidSave)
        trace("\(device.name) crashes in the middle of a save")
        throw SimCrash()
    }

    /// One random local operation; a store refusal (name taken, not empty, a
    /// cycle) is what a user would see as an error, and is fine.
    func localOperation(_ device: SimDevice) throws {
        operations += 1
        let store = device.store
        do {
            let items = try tree(store)
            let notes = items.filter { if case .note = $0.ref { return true } else { return false } }
            let folders = items.filter { if case .folder = $0.ref { return true } else { return false } }
            let localFiles = items.filter {
                if case .local = $0.ref { return $0.kind == .file } else { return false }
            }
            let directories: [DirectoryRef] = [.root] + folders.compactMap { $0.ref.directory }
            touchSometimes(device, items)
            let weights: [Double] = [
                notes.count < 3 ? 3 : 1,  // create
                notes.isEmpty ? 0 : 5,  // edit
                notes.isEmpty ? 0 : 1,  // rename or move
                notes.isEmpty ? 0 : 0.6,  // delete
                configuration.folderOpRate * 3,  // folder create
                folders.isEmpty ? 0 : configuration.folderOpRate * 3,  // folder rename / move
                folders.isEmpty ? 0 : configuration.folderOpRate,  // folder delete
                notes.isEmpty ? 0 : 0.3,  // across the local-only line
                localFiles.isEmpty ? 0 : 0.4,  // local file back to a synced name
                localFiles.isEmpty ? 0 : 0.1,  // delete a local file
                configuration.oversizeRate * 10,  // oversized
            ]
            switch random.weighted(weights) ?? 0 {
            case 0: try createNote(device, in: random.pick(directories) ?? .root)
            case 1: if let note = random.pick(notes) { try editNote(device, note) }
            case 2: if let note = random.pick(notes) { try renameNote(device, note, directories: directories) }
            case 3:
                if let note = random.pick(notes) {
                    let old = try store.admin.contents(of: note.ref)
                    try store.tree.removeFile(in: note.parent, name: note.name)
                    removedOnPurpose(old)
                    trace("\(device.name) rm \(note.name)")
                }
            case 4:
                let name = random.pick(Self.folderNames) ?? "x"
                let parent = random.pick(directories) ?? .root
                _ = try store.tree.makeDirectory(in: parent, name: name)
                trace("\(device.name) mkdir \(parent)/\(name)")
            case 5:
                if let folder = random.pick(folders) {
                    let target = random.pick(directories) ?? .root
                    let name = random.chance(0.5) ? folder.name : (random.pick(Self.folderNames) ?? "x")
                    try renameAccounted(device, from: folder.parent, name: folder.name, to: target, newName: name)
                    trace("\(device.name) mv folder \(folder.name) -> \(target)/\(name)")
                }
            case 6:
                if let folder = random.pick(folders) {
                    try store.tree.removeDirectory(in: folder.parent, name: folder.name)
                    trace("\(device.name) rmdir \(folder.name)")
                }
            case 7: if let note = random.pick(notes) { try moveToLocalOnly(device, note) }
            case 8:
                if let file = random.pick(localFiles) {
                    try moveFromLocalOnly(device, file, directories: directories)
                }
            case 9:
                if let file = random.pick(localFiles) {
                    let old = try store.admin.contents(of: file.ref)
                    try store.tree.removeFile(in: file.parent, name: file.name)
                    removedOnPurpose(old)
                    trace("\(device.name) rm local \(file.name)")
                }
            default: try createOversized(device, in: random.pick(directories) ?? .root, notes: notes)
            }
        } catch let error as StoreError {
            switch error {
            case .database, .busy, .localFile, .diskFull, .newerSchema, .syncMismatch:
                violation("\(device.name): the store failed: \(error)")
            default:
                trace("\(device.name) the store said no: \(error)")
            }
        } catch is SimCrash {
            try device.crashAndReopen(engineConfiguration: engineConfiguration, world: self)
        }
    }

    private func createNote(_ device: SimDevice, in directory: DirectoryRef) throws {
        let title = random.pick(Self.titles) ?? "n"
        let body = SimText.body(newLines(random.int(1...4)))
        if random.chance(0.5) {
            try device.store.admin.createNote(in: directory, title: title, body: body)
            wrote(body)
        } else {
            // The mount's way: create the file, then write it.
            let entry = try device.store.tree.createFile(in: directory, name: title)
            try maybeCrashMidSave(device)
            try device.store.tree.write(entry.ref, offset: 0, bytes: body)
            wrote(body)
        }
        trace("\(device.name) create \(directory)/\(title) {\(Self.tokenList(body))}")
    }

    /// Adds, changes, deletes or moves lines, saved the way some editor saves.
    func editNote(_ device: SimDevice, _ note: SimItem) throws {
        let store = device.store
        let old = try store.admin.contents(of: note.ref)
        var lines = SimText.lines(old)
        var appendOnly = true
        for _ in 0..<random.int(1...3) {
            let big = old.count * 10 > configuration.serverNoteLimit * 6
            switch random.weighted([big ? 0.5 : 3, 2, lines.isEmpty ? 0 : (big ? 4 : 1.5), lines.count < 2 ? 0 : 1]) {
            case 0:
                lines.insert(contentsOf: newLines(1), at: random.int(0...lines.count))
                appendOnly = false
            case 1:
                lines.append(contentsOf: newLines(1))
            case 2:
                let index = random.int(0...(lines.count - 1))
                if random.chance(0.5) { lines[index] = newLines(1)[0] } else { lines.remove(at: index) }
                appendOnly = false
            default:
                let line = lines.remove(at: random.int(0...(lines.count - 1)))
                lines.insert(line, at: random.int(0...lines.count))
                appendOnly = false
            }
        }
        let new = SimText.body(lines)
        try save(device, note, old: old, new: new, appendOnly: appendOnly)
    }

    /// Saves `new` over a note that holds `old`, with one of the patterns editors use.
    func save(_ device: SimDevice, _ note: SimItem, old: Data, new: Data, appendOnly: Bool) throws {
        let store = device.store
        kernelState.savingTokens = SimText.tokens(old).union(SimText.tokens(new))
        defer { kernelState.savingTokens = [] }
        let patterns: [Double] =
            [1, configuration.savePatternRate, configuration.savePatternRate, configuration.savePatternRate,
             configuration.savePatternRate * 0.5, appendOnly && new.count >= old.count ? 1 : 0]
        let pattern = random.weighted(patterns) ?? 0
        switch pattern {
        case 0:
            guard case .note(let id) = note.ref else { return }
            try store.admin.replaceBody(of: id, with: new)
            trace("\(device.name) edit \(note.name) (replace)")
        case 1:
            // Truncate and rewrite (`>`, cp, nano).
            try store.tree.truncate(note.ref, to: 0)
            try maybeCrashMidSave(device)
            try store.tree.write(note.ref, offset: 0, bytes: new)
            trace("\(device.name) edit \(note.name) (truncate and rewrite)")
        case 2:
            // Write a temp file, rename it over the note (Python's os.replace, rsync, sed -i).
            let temp = random.chance(0.5) ? ".\(note.name).tmp\(random.int(100...999))" : "\(note.name).part"
            let file = try store.tree.createFile(in: note.parent, name: temp)
            try maybeCrashMidSave(device)
            try store.tree.write(file.ref, offset: 0, bytes: new)
            wrote(new)
            try maybeCrashMidSave(device)
            try renameAccounted(device, from: note.parent, name: temp, to: note.parent, newName: note.name)
            trace("\(device.name) edit \(note.name) (temp file \(temp) renamed over it)")
        case 3:
            // vim: rename to a backup, write a new file, delete the backup.
            let backup = note.name + "~"
            try renameAccounted(device, from: note.parent, name: note.name, to: note.parent, newName: backup)
            try maybeCrashMidSave(device)
            let entry = try store.tree.createFile(in: note.parent, name: note.name, exclusive: false)
            try maybeCrashMidSave(device)
            try store.tree.write(entry.ref, offset: 0, bytes: new)
            wrote(new)
            try maybeCrashMidSave(device)
            removedOnPurpose(old, keeping: new)
            try store.tree.removeFile(in: note.parent, name: backup)
            trace("\(device.name) edit \(note.name) (vim: backup, new file, unlink backup)")
        case 4:
            // git checkout and friends: unlink, then create again.
            try store.tree.removeFile(in: note.parent, name: note.name)
            removedOnPurpose(old)
            try maybeCrashMidSave(device)
            let entry = try store.tree.createFile(in: note.parent, name: note.name, exclusive: false)
            try maybeCrashMidSave(device)
            try store.tree.write(entry.ref, offset: 0, bytes: new)
            trace("\(device.name) edit \(note.name) (unlink and recreate)")
        default:
            try store.tree.write(
                note.ref, offset: Int64(old.count), bytes: new.suffix(from: new.startIndex + old.count))
            trace("\(device.name) edit \(note.name) (append)")
        }
        wrote(new)
        removedOnPurpose(old, keeping: new)
        trace("  \(note.name): {\(Self.tokenList(old))} -> {\(Self.tokenList(new))}")
    }

    static func tokenList(_ data: Data) -> String {
        SimText.tokens(data).sorted().map(String.init).joined(separator: ",")
    }

    private func renameNote(_ device: SimDevice, _ note: SimItem, directories: [DirectoryRef]) throws {
        let target = random.chance(0.6) ? note.parent : (random.pick(directories) ?? .root)
        let name = random.pick(Self.titles) ?? "n"
        let replaced = try renameAccounted(
            device, from: note.parent, name: note.name, to: target, newName: name, noReplace: random.chance(0.3))
        trace("\(device.name) mv \(note.name) -> \(target)/\(name)\(replaced ? " (over an existing file)" : "")")
    }

    /// A rename; when it replaces a file, the text that file held and the
    /// source does not is removed on purpose. Returns true when it replaced one.
    @discardableResult
    func renameAccounted(
        _ device: SimDevice, from: DirectoryRef, name: String, to: DirectoryRef, newName: String,
        noReplace: Bool = false
    ) throws -> Bool {
        let store = device.store
        guard let source = try store.tree.lookup(in: from, name: name) else { throw StoreError.notFound(name) }
        let target = try store.tree.lookup(in: to, name: newName)
        var replacedBody: Data?
        if let target, target.ref != source.ref, target.kind == .file {
            replacedBody = try store.admin.contents(of: target.ref)
        }
        let sourceBody = source.kind == .file ? try store.admin.contents(of: source.ref) : Data()
        _ = try store.tree.rename(from: from, name: name, to: to, newName: newName, noReplace: noReplace)
        if let replacedBody { removedOnPurpose(replacedBody, keeping: sourceBody) }
        return replacedBody != nil
    }

    private func moveToLocalOnly(_ device: SimDevice, _ note: SimItem) throws {
        let old = try device.store.admin.contents(of: note.ref)
        let name = random.chance(0.5) ? note.name + "~" : "." + note.name
        try renameAccounted(device, from: note.parent, name: note.name, to: note.parent, newName: name)
        removedOnPurpose(old)
        trace("\(device.name) mv \(note.name) -> \(name) (across the local-only line)")
    }

    private func moveFromLocalOnly(_ device: SimDevice, _ file: SimItem, directories: [DirectoryRef]) throws {
        let target = random.chance(0.7) ? file.parent : (random.pick(directories) ?? .root)
        guard !target.isLocalOnly else { return }
        let name = random.pick(Self.titles) ?? "n"
        try renameAccounted(device, from: file.parent, name: file.name, to: target, newName: name)
        trace("\(device.name) mv \(file.name) -> \(target)/\(name) (back across the local-only line)")
    }

    private func createOversized(_ device: SimDevice, in directory: DirectoryRef, notes: [SimItem]) throws {
        count(.oversizedNote)
        var lines: [String] = []
        var size = 0
        while size <= configuration.serverNoteLimit {
            let line = newLines(1)[0] + " " + String(repeating: "pad ", count: random.int(5...40))
            size += line.utf8.count + 1
            lines.append(line)
        }
        if let note = random.pick(notes), random.chance(0.5) {
            let old = try device.store.admin.contents(of: note.ref)
            let new = SimText.body(SimText.lines(old) + lines)
            try save(device, note, old: old, new: new, appendOnly: true)
            trace("\(device.name) grows \(note.name) past the server's limit (\(new.count) bytes)")
        } else {
            let body = SimText.body(lines)
            let title = "big \(random.int(1...9)).md"
            try device.store.admin.createNote(in: directory, title: title, body: body)
            wrote(body)
            trace("\(device.name) create oversized \(title) (\(body.count) bytes)")
        }
    }

    /// Two devices give notes the same title in the root.
    func makeTwins() throws {
        guard devices.count >= 2 else { return }
        count(.twins)
        let first = random.int(0...(devices.count - 1))
        var second = random.int(0...(devices.count - 2))
        if second >= first { second += 1 }
        let title = random.pick(Self.titles) ?? "n"
        for index in [first, second] {
            let body = SimText.body(newLines(random.int(1...2)))
            do {
                try devices[index].store.admin.createNote(in: .root, title: title, body: body)
                wrote(body)
            } catch {
                trace("\(devices[index].name) the store said no: \(error)")
            }
        }
        trace("dev\(first) and dev\(second) both make \(title) in the root")
    }

    /// Called by the transport between a push and its answer: the person keeps typing.
    func maybeEditInFlight(device index: Int, moment: String) {
        guard faultsEnabled, random.chance(configuration.inFlightEditRate * 0.5) else { return }
        let device = devices[index]
        do {
            let notes = try tree(device.store).filter { if case .note = $0.ref { return true } else { return false } }
            guard let note = random.pick(notes) else { return }
            count(.editInFlight)
            trace("\(device.name) edits while a push is in flight (\(moment))")
            try editNote(device, note)
            if breakage == .forgetsToFreeze, case .note(let id) = note.ref,
                try device.reader.queryOne(
                    "SELECT 1 FROM outbox WHERE entity_kind = 'note' AND entity_id = ? AND state = 'in_flight'",
                    id.description, map: { _ in true }) ?? false
            {
                try foldEditIntoChangeInFlight(device, noteID: id.description)
            }
            device.dirtyTokens.formUnion(try device.tokensInDirtyNotes())
        } catch is SimCrash {
            // A crash inside the engine's run: take effect when the run returns.
            device.crashPending = true
        } catch {
            trace("\(device.name) in-flight edit failed: \(error)")
        }
    }
}
