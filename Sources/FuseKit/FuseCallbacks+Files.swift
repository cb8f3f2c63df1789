import CFuse
import Foundation

// Files: open, create, read, write, release, fsync.
extension FuseCallbacks {
    static func open(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        let flags = OpenFlags(rawValue: cfuse_fi_flags(fileInfo))
        serve(req, "open", fileInfo: fileInfo) { dispatcher in
            .open(try dispatcher.operations.open(inode: inode, flags: flags))
        }
    }

    static func create(
        _ req: fuse_req_t?, _ parent: fuse_ino_t, _ namePointer: UnsafePointer<CChar>?, _ mode: mode_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let flags = OpenFlags(rawValue: cfuse_fi_flags(fileInfo))
        serve(req, "create", fileInfo: fileInfo, changing: RequestMarker.Directories(first: parent)) { dispatcher in
            let name = try copyName(namePointer)
            let context = req.map(context) ?? RequestContext(uid: 0, gid: 0, pid: 0, umask: 0)
            let (entry, open) = try dispatcher.operations.create(
                parent: parent, name: name, mode: mode, flags: flags, context: context)
            return .create(entry, open)
        }
    }

    static func read(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "read") { dispatcher in
            guard offset >= 0, size >= 0 else { throw FileSystemError.invalid }
            return .data(try dispatcher.operations.read(inode: inode, handle: fileHandle, offset: Int64(offset), count: size))
        }
    }

    static func write(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ bytes: UnsafePointer<CChar>?, _ size: Int, _ offset: off_t,
        _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        // libfuse copies the descriptor's flags (O_APPEND among them) into
        // every write, with or without open requests.
        let flags = OpenFlags(rawValue: cfuse_fi_flags(fileInfo))
        serve(req, "write") { dispatcher in
            guard offset >= 0, size >= 0 else { throw FileSystemError.invalid }
            let buffer = UnsafeRawBufferPointer(start: bytes.map { UnsafeRawPointer($0) }, count: bytes == nil ? 0 : size)
            return .written(
                try dispatcher.operations.write(
                    inode: inode, handle: fileHandle, offset: Int64(offset), bytes: buffer, flags: flags))
        }
    }

    static func release(_ req: fuse_req_t?, _ inode: fuse_ino_t, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "release") { dispatcher in
            dispatcher.operations.release(inode: inode, handle: fileHandle)
            return .success
        }
    }

    static func fsync(
        _ req: fuse_req_t?, _ inode: fuse_ino_t, _ dataOnly: Int32, _ fileInfo: UnsafeMutablePointer<fuse_file_info>?
    ) {
        let fileHandle = cfuse_fi_fh(fileInfo)
        serve(req, "fsync") { dispatcher in
            try dispatcher.operations.fsync(inode: inode, handle: fileHandle, dataOnly: dataOnly != 0)
            return .success
        }
    }
}
