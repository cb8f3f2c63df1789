import Foundation
import NotesModel
import NotesStore

struct ImportCommand: Command {
    static let name = "import"
    static let summary = "Copy a plain tree of files into your notes (no mount needed)"
    static let help = """
        Usage: notesfs import <dir> [--data DIR | --profile NAME]

        Copies every file under <dir> into the notes database as a note, and every
        directory as a folder, with the same names the mount shows. A note that
        already exists at a path gets the file's bytes (identical files change
        nothing), so importing a backup twice is safe. Hidden and editor scratch
        files (.git, *.swp, *~ ...) and symbolic links are skipped.
        """
    static let spec = ArgumentSpec(options: DataLocation.options, positional: 1...1)

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let source = URL(fileURLWithPath: arguments.positional[0]).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source.path, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw CommandError.failed("\(source.path) is not a directory") }
        let store = try DataLocation(arguments).openStore(create: true)
        var importer = TreeImporter(store: store, console: console)
        try importer.importDirectory(source, into: .root)
        try store.admin.flushSearchIndex()
        console.out(
            "Imported \(importer.created) new and \(importer.updated) changed notes "
                + "(\(importer.unchanged) unchanged, \(importer.skipped) skipped) into \(store.path).")
        return importer.failed == 0 ? 0 : 1
    }
}

/// Walks a directory tree and mirrors it into the store.
struct TreeImporter {
    let store: NotesStore
    let console: Console
    var created = 0
    var updated = 0
    var unchanged = 0
    var skipped = 0
    var failed = 0

    mutating func importDirectory(_ url: URL, into directory: DirectoryRef) throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
        } catch {
            console.error("cannot read \(url.path): \(error.localizedDescription)")
            failed += 1
            return
        }
        for name in names {
            let child = url.appendingPathComponent(name)
            if LocalOnlyNames.isLocalOnly(name) || (directory == .root && name == NotesStore.controlDirectoryName) {
                skipped += 1
                continue
            }
            let attributes = try? FileManager.default.attributesOfItem(atPath: child.path)
            let type = attributes?[.type] as? FileAttributeType
            do {
                switch type {
                case .typeDirectory?:
                    let folder = try folderRef(named: name, in: directory)
                    try importDirectory(child, into: folder)
                case .typeRegular?:
                    try importFile(child, name: name, in: directory, attributes: attributes ?? [:])
                default:
                    skipped += 1
                }
            } catch {
                console.error("\(child.path): \(UserFacingError.describe(error))")
                failed += 1
                if case StoreError.diskFull = error { throw error }
            }
        }
    }

    private func folderRef(named name: String, in directory: DirectoryRef) throws -> DirectoryRef {
        if let existing = try store.tree.lookup(in: directory, name: name) {
            guard let folder = existing.ref.directory else { throw StoreError.notADirectory(name) }
            return folder
        }
        guard let folder = try store.tree.makeDirectory(in: directory, name: name).ref.directory else {
            throw StoreError.notADirectory(name)
        }
        return folder
    }

    private mutating func importFile(
        _ url: URL, name: String, in directory: DirectoryRef, attributes: [FileAttributeKey: Any]
    ) throws {
        let body = try Data(contentsOf: url)
        let modified = (attributes[.modificationDate] as? Date).map { Int64($0.timeIntervalSince1970 * 1e9) }
        if let existing = try store.tree.lookup(in: directory, name: name) {
            guard case .note(let id) = existing.ref else { throw StoreError.isADirectory(name) }
            if try store.admin.contents(of: existing.ref) == body {
                unchanged += 1
                return
            }
            try store.admin.replaceBody(of: id, with: body)
            if let modified { try store.admin.setModified(existing.ref, nanoseconds: modified) }
            updated += 1
        } else {
            try store.admin.createNote(in: directory, title: NameCodec.title(forName: name), body: body,
                                 modifiedNanoseconds: modified)
            created += 1
        }
    }
}
