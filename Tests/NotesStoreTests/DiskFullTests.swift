import Foundation
import NotesModel
import Testing
import TestSupport

@testable import NotesStore

/// A client database on a small disk that fills up: saves fail before the
/// reserve, status says so and what to do, and the sync engine's own writes
/// (pulled notes) stop before the disk reaches zero.
@Suite(.serialized) struct DiskFullTests {
    @Test func statusSaysSavesAreFailingAndPulledNotesNeverFillTheDiskToZero() throws {
        guard let disk = SmallDisk(megabytes: 24) else {
            print("SKIPPED: mounting a tmpfs needs root")
            if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" { Issue.record("needs root") }
            return
        }
        defer { disk.unmount() }
        var configuration = StoreConfiguration()
        configuration.diskReserveBytes = 8 << 20
        let store = try NotesStore(path: disk.path + "/notes.sqlite", configuration: configuration)
        try store.createNote(in: .root, title: "kept.md", body: Data("safe\n".utf8))
        #expect(!(try store.status().humanText(nowNanoseconds: 0).contains("Disk full")))

        disk.fill(leaving: 6 << 20)
        #expect(throws: StoreError.diskFull) {
            try store.createNote(in: .root, title: "new.md", body: Data("lost?\n".utf8))
        }
        let text = try store.status().humanText(nowNanoseconds: 0)
        #expect(text.contains("Disk full: saves are failing"), "\(text)")
        #expect(text.contains("free some space"))
        #expect(String(decoding: try store.status().json(), as: UTF8.self).contains("diskFull"))

        // The sync engine keeps pulling 1 MiB notes: it stops with diskFull
        // while space is left, and never takes the disk to zero.
        var pulled = 0
        var stopped = false
        for index in 0..<40 {
            let body = Data(String(repeating: "pulled line \(index)\n", count: 60_000).utf8)
            do {
                try store.applyPulled(
                    [RemoteEntity(.note(NoteID()), version: Int64(index + 1), deleted: false,
                                  note: NoteContent(title: "p\(index).md", body: body, folderID: nil))],
                    cursor: "e.\(index + 1)")
                pulled += 1
            } catch {
                // (A `catch StoreError.diskFull` clause crashes Swift 6.3.1's ownership verifier.)
                guard case .diskFull = error else { throw error }
                stopped = true
                break
            }
        }
        #expect(stopped, "pulled \(pulled) notes and never stopped")
        #expect(disk.freeBytes >= 2 << 20, "free: \(disk.freeBytes)")
        #expect(try store.lookup(in: .root, name: "kept.md") != nil)

        disk.unfill()
        try store.createNote(in: .root, title: "after.md", body: Data("room again\n".utf8))
        #expect(!(try store.status().humanText(nowNanoseconds: 0).contains("Disk full")))
    }
}
