import Foundation
import NotesStore

// Extended attributes: user.notesfs.id, .state and .version.
extension NotesFileSystem {
    static let attributePrefix = "user.notesfs."
    static let idAttribute = "user.notesfs.id"
    static let stateAttribute = "user.notesfs.state"
    static let versionAttribute = "user.notesfs.version"

    public func extendedAttribute(inode: UInt64, name: String) throws -> [UInt8] {
        // Everything else (security.capability before every write, ACLs) is
        // answered here without touching the database.
        guard name.hasPrefix(Self.attributePrefix), !ControlDirectory.owns(inode) else {
            throw FileSystemError.noData
        }
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

    public func extendedAttributeNames(inode: UInt64) throws -> [String] {
        guard !ControlDirectory.owns(inode) else { return [] }
        let info = try tree.syncInfo(for: try resolve(inode))
        var names: [String] = []
        if info.entity != nil { names.append(Self.idAttribute) }
        names.append(Self.stateAttribute)
        if info.version != nil { names.append(Self.versionAttribute) }
        return names
    }

    public func setExtendedAttribute(inode: UInt64, name: String, value: [UInt8], flags: Int32) throws {
        try refuseChangeInMoments(inode)
        // Restoring a backup with `rsync -aX` sets these: accepted, and ignored.
        guard name.hasPrefix(Self.attributePrefix) else { throw FileSystemError.notSupported }
        _ = try resolve(inode)
    }

    public func removeExtendedAttribute(inode: UInt64, name: String) throws {
        try refuseChangeInMoments(inode)
        guard name.hasPrefix(Self.attributePrefix) else { throw FileSystemError.noData }
    }
}
