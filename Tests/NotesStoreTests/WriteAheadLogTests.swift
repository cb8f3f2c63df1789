import Foundation
import NotesModel
@testable import NotesStore
import TestSupport
import Testing

/// The mount gives the write-ahead log its full size at start, so saves sync
/// a file that does not grow, and still empties it at unmount.
@Suite struct WriteAheadLogTests {
    static let fullSize = 32 + 8_192 * (24 + 4_096)

    func logSize(_ fixture: StoreFixture) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: fixture.databasePath + "-wal")[.size] as? Int) ?? nil
    }

    @Test func theLogGetsItsCheckpointSizeOnceAndUnmountStillEmptiesIt() throws {
        let fixture = try StoreFixture()
        defer { fixture.remove() }
        let store = fixture.store
        let note = try store.createNote(in: .root, title: "kept.md", body: Data(utf8: "before\n"))
        let before = try #require(logSize(fixture))
        #expect(try store.prepareWriteAheadLog() == Int64(Self.fullSize - before))
        #expect(logSize(fixture) == Self.fullSize)
        #expect(try store.prepareWriteAheadLog() == 0)

        for round in 1...20 {
            try store.write(.note(note), offset: 0, bytes: Data(utf8: "round \(round)\n"))
        }
        #expect(logSize(fixture) == Self.fullSize, "saves overwrite the zeros instead of growing the log")
        #expect(try store.integrityCheck() == ["ok"])

        #expect(try store.checkpointForShutdown())
        #expect(logSize(fixture) == 0)
        let reopened = try NotesStore(path: fixture.databasePath)
        #expect(try reopened.read(.note(note), offset: 0, count: 100) == Data(utf8: "round 20\n"))
    }

    @Test func aDiskWithLittleRoomToSpareKeepsTheLogAsItIs() throws {
        var configuration = StoreConfiguration()
        configuration.diskReserveBytes = Int64.max / 4
        let fixture = try StoreFixture(configuration: configuration)
        defer { fixture.remove() }
        let before = logSize(fixture)
        #expect(try fixture.store.prepareWriteAheadLog() == 0)
        #expect(logSize(fixture) == before)
    }
}
