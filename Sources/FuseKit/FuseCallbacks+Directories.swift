import CFuse
import Foundation

// Directories: opendir, readdir and readdirplus, releasedir, fsyncdir.
extension FuseCallbacks {
    static func opendir(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        serve(req, "opendir", fileInfo: fileInfo) { dispatcher in
            .openDirectory(try dispatcher.operations.openDirectory(inode: inode))
        }
    }

    static func readdir(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?, plus: Bool
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, plus ? "readdirplus" : "readdir") { dispatcher in
            guard let req, offset >= 0 else { throw FileSystemError.invalid }
            let capacity = min(max(size, 0), directoryBufferBytesMax)
            // Filled in place and handed to the reply as it is: zeroing the
            // kernel's buffer (32 KiB for `find`), then copying the used part
            // byte by byte, cost more than the entries themselves.
            let buffer = try [UInt8](unsafeUninitializedCapacity: capacity) { storage, initialized in
                initialized = 0
                guard let bytes = storage.baseAddress, capacity > 0 else { return }
                let base = UnsafeMutableRawPointer(bytes).assumingMemoryBound(to: CChar.self)
                var used = 0
                defer { initialized = used }
                try dispatcher.operations.readDirectory(
                    inode: inode, handle: fileHandle, offset: Int64(offset), plus: plus
                ) { entry in
                    let remaining = capacity - used
                    let needed: Int = entry.name.withCString { name in
                        if plus, let reply = entry.reply {
                            var parameter = entryParameter(reply)
                            return fuse_add_direntry_plus(
                                req, base + used, remaining, name, &parameter, off_t(entry.offset))
                        }
                        if plus {
                            // `.` and `..`: an entry with inode 0 is not looked up by the kernel.
                            var parameter = fuse_entry_param()
                            parameter.attr = statBuffer(entry.attributes)
                            parameter.ino = 0
                            return fuse_add_direntry_plus(
                                req, base + used, remaining, name, &parameter, off_t(entry.offset))
                        }
                        var status = statBuffer(entry.attributes)
                        return fuse_add_direntry(req, base + used, remaining, name, &status, off_t(entry.offset))
                    }
                    guard needed <= remaining else { return false }
                    used += needed
                    return true
                }
            }
            return .bytes(buffer)
        }
    }

    static func releasedir(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?)
    {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "releasedir") { dispatcher in
            dispatcher.operations.releaseDirectory(inode: inode, handle: fileHandle)
            return .success
        }
    }

    static func fsyncdir(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ dataOnly: Int32, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "fsyncdir") { dispatcher in
            try dispatcher.operations.fsyncDirectory(inode: inode, handle: fileHandle, dataOnly: dataOnly != 0)
            return .success
        }
    }
}
