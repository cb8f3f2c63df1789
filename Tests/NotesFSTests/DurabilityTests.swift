import Foundation
import NotesModel
@testable import NotesStore
import SQLiteKit
import TestSupport
import Testing

@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct DurabilityTests {
    /// A writer appends numbered lines to three notes, fsyncing each and
    /// printing it once fsync returned; the daemon is SIGKILLed at a random
    /// moment. After each remount every acknowledged line is there.
    @Test func everyFsyncedWriteSurvivesTwentyKillsOfTheDaemon() throws {
        let fixture = try MountFixture(mount: false)
        defer { fixture.remove() }
        let writer = fixture.directory.file("writer.py")
        try """
            import os, sys
            round_ = sys.argv[1]
            for i in range(1000000):
                name = 'w%d.md' % (i % 3)
                line = ('round %s line %d\\n' % (round_, i)).encode()
                fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                os.write(fd, line)
                os.fsync(fd)
                os.close(fd)
                print(name, line.decode().strip(), flush=True)
            """.write(toFile: writer, atomically: true, encoding: .utf8)
        let seed = Seeds.one(20_240_520)
        var generator = SplitMix64(seed: seed)
        var acknowledged: [String: [String]] = [:]
        for round in 0..<20 {
            try fixture.mount()
            let delayMilliseconds = Int.random(in: 0...300, using: &generator)
            let ackPath = fixture.directory.file("ack-\(round)")
            // The writer runs in the background; the daemon dies under it, at a
            // random moment after its first acknowledged write (python's start
            // alone can take longer than the delay on a loaded machine).
            try fixture.sh("(python3 '\(writer)' \(round) > '\(ackPath)' 2>/dev/null &)")
            let firstAckDeadline = Date().addingTimeInterval(60)
            while ((try? Data(contentsOf: URL(fileURLWithPath: ackPath)))?.isEmpty ?? true) && Date() < firstAckDeadline {
                usleep(5_000)
            }
            usleep(useconds_t(delayMilliseconds * 1_000))
            fixture.killDaemon()
            usleep(100_000)
            let acks = (try? String(contentsOfFile: ackPath, encoding: .utf8)) ?? ""
            for line in acks.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { continue }
                acknowledged["/" + parts[0], default: []].append(String(parts[1]))
            }
            try fixture.mount()
            for (path, lines) in acknowledged {
                let content = try String(contentsOfFile: fixture.mountpoint + path, encoding: .utf8)
                for line in lines {
                    #expect(content.contains(line + "\n"), "\(Seeds.describe(seed)), round \(round): lost '\(line)' in \(path)")
                }
            }
            fixture.unmount()
            let connection = try Connection(path: fixture.databasePath)
            #expect(try connection.integrityCheck() == ["ok"])
            let dirtyWithoutOutbox = try connection.queryOne("""
                SELECT count(*) FROM notes n WHERE n.local_rev <> n.synced_rev AND NOT EXISTS
                (SELECT 1 FROM outbox o WHERE o.entity_kind = 'note' AND o.entity_id = n.id)
                """) { $0.int(0) }
            let outboxWithoutDirty = try connection.queryOne("""
                SELECT count(*) FROM outbox o WHERE o.entity_kind = 'note' AND NOT EXISTS
                (SELECT 1 FROM notes n WHERE n.id = o.entity_id AND (n.local_rev <> n.synced_rev OR n.deleted = 1))
                """) { $0.int(0) }
            #expect(dirtyWithoutOutbox == 0)
            #expect(outboxWithoutDirty == 0)
        }
        #expect(acknowledged.values.reduce(0) { $0 + $1.count } > 20, "the writer made progress")
    }

    /// After `notesfs unmount` the database file alone holds every commit: a
    /// backup that copies only `notes.sqlite` (and not the write-ahead log
    /// beside it) misses nothing.
    @Test func afterUnmountTheDatabaseFileAloneHoldsEveryNote() throws {
        let mount = try MountFixture()
        defer { mount.remove() }
        let text = String(repeating: "a line kept through unmount\n", count: 200)
        try text.write(toFile: mount.mountpoint + "/kept.md", atomically: false, encoding: .utf8)
        mount.unmount()
        #expect(!mount.isMounted)

        let wal = mount.dataDirectory + "/notes.sqlite-wal"
        let walSize = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        #expect(walSize == 0, "the write-ahead log still holds \(walSize) bytes")
        #expect(mount.logTail().contains("moved the write-ahead log"), "\(mount.logTail())")

        let copy = try TemporaryDirectory(prefix: "notesfs-backup")
        defer { copy.remove() }
        try FileManager.default.copyItem(atPath: mount.dataDirectory + "/notes.sqlite", toPath: copy.file("notes.sqlite"))
        let store = try NotesStoreOpener.open(copy.file("notes.sqlite"))
        let entry = try #require(try store.lookup(in: .root, name: "kept.md"))
        #expect(try store.contents(of: entry.ref) == Data(text.utf8))
    }
}
