import CFuse
import Foundation

// Names and attributes: lookup, forget, getattr, setattr, readlink, mknod,
// mkdir, unlink, rmdir, symlink, rename, link, statfs.
extension FuseCallbacks {
    static func lookup(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "lookup") { dispatcher in
            let name = try copyName(namePointer)
            return .entry(try dispatcher.operations.lookup(parent: parent, name: name))
        }
    }

    static func forget(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ count: UInt64) {
        guard let req else { return }
        if let dispatcher = FuseDispatcher.of(req) {
            dispatcher.operations.forget(inode: inode, count: count)
        }
        fuse_reply_none(req)
    }

    static func forgetMany(_ req: fuse_req_t?, _ count: Int, _ list: UnsafeMutablePointer<fuse_forget_data>?) {
        guard let req else { return }
        if let dispatcher = FuseDispatcher.of(req), let list, count > 0 {
            for item in UnsafeBufferPointer(start: list, count: count) {
                dispatcher.operations.forget(inode: item.ino, count: item.nlookup)
            }
        }
        fuse_reply_none(req)
    }

    static func getattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        let fileHandle = handle(fileInfo)
        serve(req, "getattr") { dispatcher in
            let reply = try dispatcher.operations.getAttributes(inode: inode, handle: fileHandle)
            return .attributes(reply.attributes, timeoutSeconds: reply.timeoutSeconds)
        }
    }

    static func setattr(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ attributes: UnsafeMutablePointer<stat>?, _ toSet: Int32,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = handle(fileInfo)
        var changes = AttributeChanges()
        if let attributes {
            let status = attributes.pointee
            if toSet & FUSE_SET_ATTR_MODE != 0 { changes.permissions = status.st_mode & 0o7777 }
            if toSet & FUSE_SET_ATTR_UID != 0 { changes.uid = status.st_uid }
            if toSet & FUSE_SET_ATTR_GID != 0 { changes.gid = status.st_gid }
            if toSet & FUSE_SET_ATTR_SIZE != 0 { changes.size = UInt64(clamping: status.st_size) }
            if toSet & FUSE_SET_ATTR_ATIME_NOW != 0 {
                changes.accessTime = .now
            } else if toSet & FUSE_SET_ATTR_ATIME != 0 {
                changes.accessTime = .nanoseconds(status.st_atim.nanosecondsSince1970)
            }
            if toSet & FUSE_SET_ATTR_MTIME_NOW != 0 {
                changes.modificationTime = .now
            } else if toSet & FUSE_SET_ATTR_MTIME != 0 {
                changes.modificationTime = .nanoseconds(status.st_mtim.nanosecondsSince1970)
            }
        }
        serve(req, "setattr") { dispatcher in
            let reply = try dispatcher.operations.setAttributes(inode: inode, changes: changes, handle: fileHandle)
            return .attributes(reply.attributes, timeoutSeconds: reply.timeoutSeconds)
        }
    }

    static func readlink(_ req: fuse_req_t?, _ inode: fuse_ino_t) {
        serve(req, "readlink") { dispatcher in .link(try dispatcher.operations.readLink(inode: inode)) }
    }

    static func mknod(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ mode: mode_t) {
        serve(req, "mknod", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            let context = req.map(context) ?? RequestContext(uid: 0, gid: 0, pid: 0, umask: 0)
            return .entry(try dispatcher.operations.makeNode(parent: parent, name: name, mode: mode, context: context))
        }
    }

    static func mkdir(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ mode: mode_t) {
        serve(req, "mkdir", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            let context = req.map(context) ?? RequestContext(uid: 0, gid: 0, pid: 0, umask: 0)
            return .entry(
                try dispatcher.operations.makeDirectory(parent: parent, name: name, mode: mode, context: context))
        }
    }

    static func unlink(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "unlink", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            try dispatcher.operations.removeFile(parent: parent, name: try copyName(namePointer))
            return .success
        }
    }

    static func rmdir(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "rmdir", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            try dispatcher.operations.removeDirectory(parent: parent, name: try copyName(namePointer))
            return .success
        }
    }

    static func symlink(
        _ req: fuse_req_t?, _ targetPointer: UnsafePointer<CChar>?, _ parent: fuse_ino_t,
        _ namePointer: UnsafePointer<CChar>?
    ) {
        serve(req, "symlink", changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            guard let targetPointer, let target = String(validatingCString: targetPointer) else {
                throw FileSystemError.invalid
            }
            return .entry(try dispatcher.operations.makeSymlink(parent: parent, name: name, target: target))
        }
    }

    static func rename(
        _ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ newParent: fuse_ino_t,
        _ newNamePointer: UnsafePointer<CChar>?, _ flags: UInt32
    ) {
        serve(req, "rename", changing: RequestMarker.Directories(first: parent, second: newParent)) { dispatcher in
            let name = try copyName(namePointer)
            let newName = try copyName(newNamePointer)
            try dispatcher.operations.rename(
                parent: parent, name: name, newParent: newParent, newName: newName,
                flags: RenameFlags(rawValue: flags))
            return .success
        }
    }

    static func link(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ newParent: fuse_ino_t, _ newNamePointer: UnsafePointer<CChar>?
    ) {
        serve(req, "link", changing: RequestMarker.Directories(first: newParent)) { dispatcher in
            let newName = try copyName(newNamePointer)
            return .entry(try dispatcher.operations.link(inode: inode, newParent: newParent, newName: newName))
        }
    }

    static func statfs(_ req: fuse_req_t?, _ inode: fuse_ino_t) {
        serve(req, "statfs") { dispatcher in .statistics(try dispatcher.operations.statistics(inode: inode)) }
    }
}
