import Foundation
import FuseKit
import NotesFS
import NotesModel
@testable import NotesStore
import TestSupport
import Synchronization
import Testing

/// Mounts inside the test process so the test can change the store behind the
/// kernel's back, as the sync engine will, and read through the mount.
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct InvalidationTests {
    final class InProcessMount {
        let fixture: MountFixture
        let store: NotesStore
        let mount: NotesMount

        init() throws {
            fixture = try MountFixture(mount: false)
            store = try NotesStore(path: fixture.databasePath)
            mount = try NotesMount(tree: store.tree, mountpoint: fixture.mountpoint, log: MountLog.discard)
            try mount.mount()
            mount.serveInBackground()
        }

        func stop() {
            mount.requestStop()
            _ = mount.waitUntilStopped(timeoutSeconds: 10)
            fixture.remove()
        }
    }

    @Test func aChangeMadeOutsideTheMountIsSeenAtOnce() throws {
        let mounted = try InProcessMount()
        defer { mounted.stop() }
        let fixture = mounted.fixture
        #expect(try fixture.sh("echo first > n.md && cat n.md && cat n.md") == "first\nfirst\n")
        let entry = try #require(try mounted.store.lookup(in: .root, name: "n.md"))
        guard case .note(let id) = entry.ref else { Issue.record("not a note"); return }
        try mounted.store.replaceBody(of: id, with: Data("second, longer text\n".utf8))
        mounted.mount.waitForInvalidations()
        #expect(try fixture.sh("cat n.md") == "second, longer text\n")
    }

    /// The hook the sync engine hangs on fsyncs and closes: calling it must
    /// cost the same after many calls (a function value kept bare in a Mutex
    /// was re-wrapped on every read, so each call went two frames deeper).
    @Test func theCloseHookRunsAtTheSameDepthAfterManyFsyncs() throws {
        let mounted = try InProcessMount()
        defer { mounted.stop() }
        let depths = Mutex<[Int]>([])
        mounted.mount.hooks.onFileClosed {
            let depth = Thread.callStackReturnAddresses.count
            depths.withLock { $0.append(depth) }
        }
        _ = try mounted.fixture.sh("for i in $(seq 1 120); do echo $i | dd of=n.md conv=fsync status=none; done")
        let seen = depths.withLock { $0 }
        #expect(seen.count >= 120)
        let deepest = try #require(seen.max()), shallowest = try #require(seen.min())
        // The same callers every time (fsync on a FUSE thread): a few frames
        // apart at most, never growing with the count.
        #expect(deepest - shallowest < 20, "close hook depth ranged \(shallowest)…\(deepest)")
    }

    @Test func aNameAddedOutsideTheMountAppearsDespiteACachedMiss() throws {
        let mounted = try InProcessMount()
        defer { mounted.stop() }
        let fixture = mounted.fixture
        #expect(try fixture.shell("cat late.md").status != 0)
        try mounted.store.createNote(in: .root, title: "late.md", body: Data("arrived\n".utf8))
        mounted.mount.waitForInvalidations()
        #expect(try fixture.sh("cat late.md") == "arrived\n")
        try mounted.store.createNote(in: .root, title: "late.md", body: Data("twin\n".utf8))
        mounted.mount.waitForInvalidations()
        #expect(try fixture.sh("ls") == "late (2).md\nlate.md\n")
        #expect(try fixture.sh("cat 'late (2).md'") == "twin\n")
    }

    @Test func aFoldersAttributesChangedOutsideTheMountAreSeenDespiteTheMemoryCache() throws {
        let mounted = try InProcessMount()
        defer { mounted.stop() }
        let fixture = mounted.fixture
        // Creating files reads the folder's attributes (and keeps them in memory).
        #expect(try fixture.sh("mkdir d && touch d/a.md d/b.md && chmod 750 d && stat -c %a d") == "750\n")
        let entry = try #require(try mounted.store.lookup(in: .root, name: "d"))
        try mounted.store.setMode(entry.ref, mode: 0o700)
        mounted.mount.waitForInvalidations()
        #expect(try fixture.sh("stat -c %a d && touch d/c.md && stat -c %a d") == "700\n700\n")
        try mounted.store.setModified(entry.ref, nanoseconds: 1_600_000_000_000_000_000)
        mounted.mount.waitForInvalidations()
        #expect(try fixture.sh("stat -c %Y d") == "1600000000\n")
    }
}
