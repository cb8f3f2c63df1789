import CFuse
import Foundation
import ProcessKit
import Synchronization

/// Runs one FUSE mount of a `FileSystemOperations`: mounts, serves requests on
/// libfuse's multi-threaded loop, and unmounts cleanly when asked, on SIGTERM
/// (in the daemon) or when someone runs `fusermount3 -u`.
///
/// `@unchecked Sendable`: `session` is itself thread-safe; `loopDone` is only
/// signalled once by the loop thread.
public final class Mounter: @unchecked Sendable {
    /// libfuse's worker threads at most (the store serialises writes anyway).
    public static let workerThreadsMax = 8

    public let mountpoint: String
    private let session: FuseSession
    private let log: MountLog
    private let loopDone = DispatchSemaphore(value: 0)
    private let stopRequested = Atomic<Bool>(false)

    /// Options every notesfs mount uses. No `writeback_cache`: a write is
    /// durable when it returns (DESIGN.md "Durability").
    public static let defaultOptions = ["fsname=notesfs", "subtype=notesfs", "default_permissions"]

    public init(
        mountpoint: String, operations: any FileSystemOperations, settings: FuseSettings, log: MountLog,
        options: [String] = defaultOptions
    ) throws {
        self.mountpoint = mountpoint
        self.log = log
        session = try FuseSession(
            mountpoint: mountpoint, operations: operations, options: options, settings: settings, log: log)
    }

    /// Sends one invalidation (from the invalidation thread only).
    public func notify(_ invalidation: Invalidation) -> Int32 {
        switch invalidation {
        case .inode(let inode): session.invalidateInode(inode)
        case .entry(let parent, let name): session.invalidateEntry(parent: parent, name: name)
        }
    }

    /// Mounts; requests wait in the kernel until `serve` runs.
    public func mount() throws {
        try session.mount()
        log.info("mounted \(mountpoint)")
    }

    /// Serves requests on the calling thread until the file system is unmounted.
    public func serve() -> Int32 {
        let result = session.run(maxThreads: Self.workerThreadsMax)
        log.info("request loop ended (\(result))")
        // After an outside unmount (or requestStop) there is nothing left to
        // unmount; asking again only prints an error.
        if MountTable.mount(at: mountpoint) == nil {
            session.forgetMount()
        }
        session.unmount()
        loopDone.signal()
        return result
    }

    /// Serves on a new thread (for tests that mount inside their own process).
    public func serveInBackground() {
        let thread = Thread { [self] in _ = serve() }
        thread.name = "notesfs-fuse-loop"
        thread.start()
    }

    /// Ends the mount: the loop stops and the kernel mount goes away (lazily,
    /// when files are still open). Safe from any thread and more than once.
    public func requestStop() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        log.info("unmounting \(mountpoint)")
        session.exit()
        Mounter.detach(mountpoint)
    }

    /// Waits for the loop to end after `requestStop` or an outside unmount.
    @discardableResult
    public func waitUntilStopped(timeoutSeconds: Double) -> Bool {
        loopDone.wait(timeout: .now() + timeoutSeconds) == .success
    }

    /// Lazily unmounts `path`: directly when root, otherwise through fusermount3.
    @discardableResult
    public static func detach(_ path: String) -> Bool {
        if geteuid() == 0 {
            if cfuse_lazy_umount(path) == 0 { return true }
        }
        return run(["fusermount3", "-u", "-z", path]) == 0
    }

    /// Runs a program from PATH and returns its exit status (or -1).
    static func run(_ arguments: [String]) -> Int32 {
        ChildProcess.run(arguments)
    }
}
