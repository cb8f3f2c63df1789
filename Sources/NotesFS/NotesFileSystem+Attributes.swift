import Foundation
import FuseKit
import NotesStore

// Extended attributes: user.notesfs.id, .state and .version.
extension NotesFileSystem {
    static let attributePrefix = "user.notesfs."
    /// Every other name is answered by the binding without asking (`getxattr`).
    static let attributeFilter = ExtendedAttributeFilter(keptPrefix: attributePrefix)
    static let idAttribute = "user.notesfs.id"
    static let stateAttribute = "user.notesfs.state"
    static let versionAttribute = "user.notesfs.version"

    func extendedAttribute(inode: UInt64, name: String) throws -> [UInt8] {
        // Everything else (security.capability before every write, ACLs) is
        // answered here without touching the database.
        guard name.hasPrefix(Self.attributePrefix) else { throw FileSystemError.noData }
        let info = try tree.syncInfo(for: try resolve(inode))
        switch name {
        case Self.idAttribute:
            guard let entity = info.entity else { throw FileSystemError.noData }
            return Array(entity.idText.utf8)
        case Self.stateAttribute:
            return Array(info.state.rawValue.utf8)
        case Self.versionAttribute:
            guard let version = info.version else { throw FileSystemError.noData }
            return Array(String(version).utf8)
        default:
            throw FileSystemError.noData
        }
    }

    func extendedAttributeNames(inode: UInt64) throws -> [String] {
        let info = try tree.syncInfo(for: try resolve(inode))
        var names: [String] = []
        if info.entity != nil { names.append(Self.idAttribute) }
        names.append(Self.stateAttribute)
        if info.version != nil { names.append(Self.versionAttribute) }
        return names
    }

    func setExtendedAttribute(inode: UInt64, name: String, value: [UInt8], flags: Int32) throws {
        // Restoring a backup with `rsync -aX` sets these: accepted, and ignored.
        guard name.hasPrefix(Self.attributePrefix) else { throw FileSystemError.notSupported }
        _ = try resolve(inode)
    }

    func removeExtendedAttribute(inode: UInt64, name: String) throws {
        guard name.hasPrefix(Self.attributePrefix) else { throw FileSystemError.noData }
    }
}
