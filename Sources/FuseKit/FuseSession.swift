import CFuse
import Foundation
import Synchronization

/// Owns one libfuse low-level session: created with the callback table, mounted
/// on a directory, run with the multi-threaded loop, unmounted and destroyed
/// exactly once.
///
/// `@unchecked Sendable`: the session pointer is only used by the methods
/// below; libfuse allows `notify_inval_*` and `fuse_session_exit` from any
/// thread while the loop runs, and `state` serialises mount/unmount/destroy.
public final class FuseSession: @unchecked Sendable {
    private let session: OpaquePointer
    private let dispatcher: FuseDispatcher
    public let mountpoint: String
    private let state = Mutex(State())

    private struct State {
        var mounted = false
        var signalHandlers = false
    }

    /// Creates the session. `options` are libfuse `-o` options (for example
    /// `fsname=notesfs`, `default_permissions`).
    public init(
        mountpoint: String, operations: any FileSystemOperations, options: [String], settings: FuseSettings,
        log: MountLog
    ) throws {
        self.mountpoint = mountpoint
        let dispatcher = FuseDispatcher(operations: operations, settings: settings, log: log)
        self.dispatcher = dispatcher
        var arguments = ["notesfs"]
        if !options.isEmpty {
            arguments += ["-o", options.joined(separator: ",")]
        }
        var cStrings = arguments.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        var operationTable = FuseCallbacks.makeOperationTable()
        let created: OpaquePointer? = cStrings.withUnsafeMutableBufferPointer { buffer in
            var args = cfuse_args(Int32(buffer.count), buffer.baseAddress)
            defer { fuse_opt_free_args(&args) }
            return fuse_session_new(
                &args, &operationTable, MemoryLayout<fuse_lowlevel_ops>.size,
                Unmanaged.passUnretained(dispatcher).toOpaque())
        }
        guard let created else {
            throw MountError.sessionFailed("libfuse refused the session options \(options)")
        }
        session = created
    }

    deinit {
        unmount()
        fuse_session_destroy(session)
    }

    /// Mounts the session on `mountpoint`.
    public func mount() throws {
        try state.withLock { state in
            guard !state.mounted else { return }
            guard fuse_session_mount(session, mountpoint) == 0 else {
                throw MountError.mountFailed(mountpoint)
            }
            state.mounted = true
        }
    }

    /// Makes SIGTERM, SIGINT and SIGHUP end the loop (only for the daemon process).
    public func installSignalHandlers() throws {
        try state.withLock { state in
            guard !state.signalHandlers else { return }
            guard fuse_set_signal_handlers(session) == 0 else {
                throw MountError.sessionFailed("could not install signal handlers")
            }
            state.signalHandlers = true
        }
    }

    /// Runs the multi-threaded loop until the session ends (a signal, an
    /// unmount from outside, or `exit()`). Returns 0, a signal number, or -errno.
    public func run(maxThreads: Int) -> Int32 {
        guard let config = fuse_loop_cfg_create() else { return -ENOMEM }
        defer { fuse_loop_cfg_destroy(config) }
        defer {
            if let statistics = dispatcher.statistics {
                dispatcher.log.info("requests by opcode:\n\(statistics.snapshotText())")
            }
        }
        fuse_loop_cfg_set_max_threads(config, UInt32(max(1, maxThreads)))
        fuse_loop_cfg_set_idle_threads(config, UInt32(max(1, maxThreads / 2)))
        fuse_loop_cfg_set_clone_fd(config, 0)
        return cfuse_session_loop_mt(session, config)
    }

    /// Asks the loop to end after the requests in progress.
    public func exit() {
        fuse_session_exit(session)
    }

    /// True once the loop was asked to end.
    public var hasExited: Bool { fuse_session_exited(session) != 0 }

    /// Records that the kernel mount is already gone (unmounted from outside).
    func forgetMount() {
        state.withLock { $0.mounted = false }
    }

    /// Unmounts (if mounted) and removes the signal handlers. Idempotent.
    public func unmount() {
        state.withLock { state in
            if state.mounted {
                fuse_session_unmount(session)
                state.mounted = false
            }
            if state.signalHandlers {
                fuse_remove_signal_handlers(session)
                state.signalHandlers = false
            }
        }
    }

    /// Drops the kernel's cached attributes and pages of `inode`. Only from the
    /// invalidation thread: never inside a request handler.
    func invalidateInode(_ inode: UInt64) -> Int32 {
        fuse_lowlevel_notify_inval_inode(session, inode, 0, 0)
    }

    /// Drops the kernel's cached directory entry `name` in `parent`. Only from
    /// the invalidation thread: never inside a request handler.
    func invalidateEntry(parent: UInt64, name: String) -> Int32 {
        var bytes = Array(name.utf8CString)
        let length = bytes.count - 1
        return bytes.withUnsafeMutableBufferPointer { buffer in
            fuse_lowlevel_notify_inval_entry(session, parent, buffer.baseAddress, length)
        }
    }
}
