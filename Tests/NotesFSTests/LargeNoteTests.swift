import Foundation
@testable import NotesStore
import TestSupport
import Testing

/// Large notes on a real mount: written in linear time, every fsync'd byte
/// kept through a kill, and the size cap refusing cleanly.
@Suite(.serialized, .enabled(if: mountTestsEnabled, "needs FUSE (/dev/fuse and fusermount3)"))
struct LargeNoteTests {
    /// A writer fills a note in 4 KiB pieces, fsyncing every 256 KiB and
    /// printing the size fsync made durable; the daemon is SIGKILLed mid-way.
    /// After a remount the note holds at least every fsync'd byte, exactly.
    @Test func everyFsyncedByteOfALargeNoteSurvivesAKillOfTheDaemon() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        let writer = fixture.directory.file("writer.py")
        try """
            import os
            fd = os.open('big.log', os.O_WRONLY | os.O_CREAT)
            for i in range(4096):
                os.write(fd, bytes([65 + (i * 7 + j) % 26 for j in range(4096)]))
                if i % 64 == 63:
                    os.fsync(fd)
                    print((i + 1) * 4096, flush=True)
            """.write(toFile: writer, atomically: true, encoding: .utf8)
        let ackPath = fixture.directory.file("acks")
        try fixture.sh("(python3 '\(writer)' > '\(ackPath)' 2>/dev/null &)")
        // Kill once at least 2 MiB were fsync'd (the writer is far from done).
        let deadline = Date().addingTimeInterval(60)
        var durable = 0
        while durable < 2 << 20 && Date() < deadline {
            usleep(20_000)
            let acks = (try? String(contentsOfFile: ackPath, encoding: .utf8)) ?? ""
            durable = acks.split(separator: "\n").compactMap { Int($0) }.max() ?? 0
        }
        fixture.killDaemon()
        usleep(200_000)
        let acks = (try? String(contentsOfFile: ackPath, encoding: .utf8)) ?? ""
        durable = acks.split(separator: "\n").compactMap { Int($0) }.max() ?? 0
        #expect(durable >= 2 << 20, "the writer reported \(durable) bytes fsync'd before the kill")

        try fixture.mount()
        let stored = try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.log"))
        #expect(stored.count >= durable)
        var expected = Data(capacity: stored.count)
        for piece in 0..<(stored.count / 4096) {
            for offset in 0..<4096 { expected.append(UInt8(65 + (piece * 7 + offset) % 26)) }
        }
        #expect(stored.count % 4096 == 0 && stored == expected, "stored bytes differ from what was written")
    }

    @Test func aCopyPastTheSizeLimitFailsWithEFBIGAndTheNoteIsHeldBackFromSync() throws {
        let fixture = try MountFixture()
        defer { fixture.remove() }
        // 17 MiB in one go: the kernel sends it in 1 MiB writes; the 17th is refused.
        let copy = try fixture.shell("head -c 17825792 /dev/zero | tr '\\0' 'a' > big.txt")
        #expect(copy.status != 0)
        #expect(copy.standardError.contains("File too large"), "\(copy.standardError)")
        let size = try fixture.sh("stat -c %s big.txt").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Int(size) ?? 0 <= 16 << 20)
        let status = try fixture.sh("cat .notesfs/status")
        #expect(status.contains("Held back from sync"), "\(status)")
        #expect(status.contains("/big.txt"), "\(status)")

        // Made smaller, it is no longer held.
        _ = try fixture.sh("truncate -s 1M big.txt")
        let after = try fixture.sh("cat .notesfs/status")
        #expect(!after.contains("Held back from sync"), "\(after)")
    }
}
