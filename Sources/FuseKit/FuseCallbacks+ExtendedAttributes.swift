import CFuse
import Foundation

// Extended attributes: setxattr, getxattr, listxattr, removexattr.
extension FuseCallbacks {
    static func setxattr(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?,
        _ valuePointer: UnsafePointer<CChar>?, _ size: Int, _ flags: Int32
    ) {
        serve(req, "setxattr") { dispatcher in
            guard let namePointer, let name = String(validatingCString: namePointer) else {
                throw FileSystemError.invalid
            }
            var value: [UInt8] = []
            if let valuePointer, size > 0 {
                value = Array(UnsafeRawBufferPointer(start: valuePointer, count: size))
            }
            try dispatcher.operations.setExtendedAttribute(inode: inode, name: name, value: value, flags: flags)
            return .success
        }
    }

    static func getxattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ size: Int) {
        // Names the file system keeps nothing under are answered here,
        // before any Swift string or error is made (`ExtendedAttributeFilter`).
        if let req, let namePointer, let dispatcher = FuseDispatcher.of(req),
            let code = dispatcher.settings.attributeFilter.answer(forName: namePointer)
        {
            dispatcher.statistics?.record("getxattr (other)", nanoseconds: 0)
            _ = fuse_reply_err(req, code)
            return
        }
        serve(req, "getxattr") { dispatcher in
            guard let namePointer, let name = String(validatingCString: namePointer) else {
                throw FileSystemError.noData
            }
            let value = try dispatcher.operations.extendedAttribute(inode: inode, name: name)
            if size == 0 { return .attributeSize(value.count) }
            guard value.count <= size else { throw FileSystemError.range }
            return .bytes(value)
        }
    }

    static func listxattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int) {
        serve(req, "listxattr") { dispatcher in
            let names = try dispatcher.operations.extendedAttributeNames(inode: inode)
            let bytes: [UInt8] = names.flatMap { name -> [UInt8] in Array(name.utf8) + [0] }
            if size == 0 { return .attributeSize(bytes.count) }
            guard bytes.count <= size else { throw FileSystemError.range }
            return .bytes(bytes)
        }
    }

    static func removexattr(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?) {
        serve(req, "removexattr") { dispatcher in
            guard let namePointer, let name = String(validatingCString: namePointer) else {
                throw FileSystemError.noData
            }
            try dispatcher.operations.removeExtendedAttribute(inode: inode, name: name)
            return .success
        }
    }
}
