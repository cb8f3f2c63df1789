import Foundation
import FuseKit

@testable import NotesFS

// System calls on names, attributes, listings and extended attributes.
extension InProcessKernel {
    /// `lstat(2)`: the walk, then a getattr (as after the attributes expired).
    func stat(_ path: String) throws -> FileAttributes {
        try syscall {
            let inode = try resolve(path).attributes.inode
            return try fstatInode(inode)
        }
    }

    /// True when `path` names something.
    func exists(_ path: String) throws -> Bool {
        do {
            _ = try stat(path)
            return true
        } catch let error as FileSystemError where error.errno == ENOENT {
            return false
        }
    }

    func mkdir(_ path: String, mode: UInt32 = 0o755) throws {
        try syscall {
            let (parent, name) = try walkToParent(path)
            try Self.checkNewName(name)
            let reply = try request(changingNamesIn: [parent]) {
                try $0.makeDirectory(parent: parent, name: name, mode: mode, context: context)
            }
            took(reply)
        }
    }

    /// `mknod(2)`; `mode` carries the file type (`S_IFIFO`, `S_IFREG`).
    func mknod(_ path: String, mode: UInt32) throws {
        try syscall {
            let (parent, name) = try walkToParent(path)
            try Self.checkNewName(name)
            let reply = try request(changingNamesIn: [parent]) {
                try $0.makeNode(parent: parent, name: name, mode: mode, context: context)
            }
            took(reply)
        }
    }

    func symlink(_ target: String, _ path: String) throws {
        try syscall {
            let (parent, name) = try walkToParent(path)
            try Self.checkNewName(name)
            let reply = try request(changingNamesIn: [parent]) {
                try $0.makeSymlink(parent: parent, name: name, target: target)
            }
            took(reply)
        }
    }

    func readlink(_ path: String) throws -> String {
        try syscall {
            let inode = try resolve(path).attributes.inode
            return try request { try $0.readLink(inode: inode) }
        }
    }

    /// `link(2)`: the kernel looks the source up, then asks.
    func link(_ path: String, _ newPath: String) throws {
        try syscall {
            let inode = try resolve(path).attributes.inode
            let (parent, name) = try walkToParent(newPath)
            try Self.checkNewName(name)
            took(try request(changingNamesIn: [parent]) { try $0.link(inode: inode, newParent: parent, newName: name) })
        }
    }

    /// `unlink(2)`: the name is looked up first (the path walk), then removed.
    func unlink(_ path: String) throws {
        try syscall {
            let (parent, name) = try walkToParent(path)
            guard try lookup(parent, name) != nil else { throw FileSystemError.notFound }
            try request(changingNamesIn: [parent]) { try $0.removeFile(parent: parent, name: name) }
        }
    }

    func rmdir(_ path: String) throws {
        try syscall {
            let (parent, name) = try walkToParent(path)
            guard try lookup(parent, name) != nil else { throw FileSystemError.notFound }
            try request(changingNamesIn: [parent]) { try $0.removeDirectory(parent: parent, name: name) }
        }
    }

    /// `renameat2(2)`: both names are looked up first, as the kernel's walks do.
    func rename(_ path: String, _ newPath: String, flags: UInt32 = 0) throws {
        try syscall {
            let (parent, name) = try walkToParent(path)
            guard try lookup(parent, name) != nil else { throw FileSystemError.notFound }
            let (newParent, newName) = try walkToParent(newPath)
            try Self.checkNewName(newName)
            _ = try lookup(newParent, newName)
            try request(changingNamesIn: [parent, newParent]) {
                try $0.rename(
                    parent: parent, name: name, newParent: newParent, newName: newName,
                    flags: RenameFlags(rawValue: flags))
            }
        }
    }

    /// `chmod`, `chown`, `utimensat` and `truncate` by path: one setattr.
    @discardableResult
    func setAttributes(_ path: String, _ changes: AttributeChanges) throws -> FileAttributes {
        try syscall {
            let inode = try resolve(path).attributes.inode
            let reply = try request { try $0.setAttributes(inode: inode, changes: changes, handle: nil) }
            cachedSizes[inode] = Int64(reply.attributes.size)
            return reply.attributes
        }
    }

    /// `chown(2)`; nil leaves that id alone (-1).
    func chown(_ path: String, uid: UInt32?, gid: UInt32?) throws {
        try setAttributes(path, AttributeChanges(uid: uid, gid: gid))
    }

    /// Sets both times (nanoseconds since 1970), as `os.utime(path, ns=…)` does.
    func utime(_ path: String, nanoseconds: Int64) throws {
        try setAttributes(
            path, AttributeChanges(accessTime: .nanoseconds(nanoseconds), modificationTime: .nanoseconds(nanoseconds)))
    }

    // MARK: Listings

    /// The names in directory `path` (without `.` and `..`), read as `ls`
    /// does: opendir, readdirplus pages continuing from the last offset
    /// taken, releasedir. Each entry's attributes come with it.
    func list(_ path: String) throws -> [String: FileAttributes] {
        try syscall {
            let inode = try resolve(path).attributes.inode
            let handle = try request { try $0.openDirectory(inode: inode) }.handle
            defer { _ = try? request { $0.releaseDirectory(inode: inode, handle: handle) } }
            var listed: [String: FileAttributes] = [:]
            var offset: Int64 = 0
            while true {
                var page: [DirectoryEntry] = []
                try request {
                    try $0.readDirectory(inode: inode, handle: handle, offset: offset, plus: true) { entry in
                        guard page.count < listingPageEntries else { return false }
                        page.append(entry)
                        return true
                    }
                }
                guard let last = page.last else { return listed }
                for entry in page where entry.name != "." && entry.name != ".." {
                    if let reply = entry.reply { took(reply) }
                    guard listed.updateValue(entry.attributes, forKey: entry.name) == nil else {
                        throw ListingError.listedTwice(entry.name)
                    }
                }
                offset = last.offset
            }
        }
    }

    enum ListingError: Error {
        case listedTwice(String)
    }

    // MARK: Extended attributes

    /// `getxattr(2)`: names the binding answers alone never reach the file system.
    func getxattr(_ path: String, _ name: String) throws -> String {
        try syscall {
            let inode = try resolve(path).attributes.inode
            if let code = NotesFileSystem.attributeFilter.answer(forName: name) { throw FileSystemError(code) }
            let value = try request { try $0.extendedAttribute(inode: inode, name: name) }
            return String(decoding: value, as: UTF8.self)
        }
    }

    func setxattr(_ path: String, _ name: String, _ value: String) throws {
        try syscall {
            let inode = try resolve(path).attributes.inode
            try request { try $0.setExtendedAttribute(inode: inode, name: name, value: Array(value.utf8), flags: 0) }
        }
    }

    // MARK: Whole files

    /// Writes `text` as `open(path, 'w').write(text)` does.
    func writeFile(_ path: String, _ text: String) throws {
        let descriptor = try open(path, O_WRONLY | O_CREAT | O_TRUNC)
        defer { try? close(descriptor) }
        try write(descriptor, text)
    }

    /// Reads a whole file as `cat` does.
    func readFile(_ path: String) throws -> String {
        let descriptor = try open(path, O_RDONLY)
        defer { try? close(descriptor) }
        return try readAll(descriptor)
    }

    private static func checkNewName(_ name: String) throws {
        guard name.utf8.count <= nameBytesMax else { throw FileSystemError.nameTooLong }
    }
}
