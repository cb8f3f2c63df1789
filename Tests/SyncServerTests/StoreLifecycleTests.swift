import Foundation
import SyncServer
import SyncServerSQLite
import Testing
import TestSupport

/// A closed store lets go of its files. A serve process opens one, but the
/// simulation and the tests open thousands in one process: a store kept alive
/// by a reference cycle once ran the simulation out of file descriptors
/// after about 1,700 seeds.
@Suite struct StoreLifecycleTests {
    /// How many descriptors this process holds on files under `directory`
    /// (counted by path, so other tests running beside this one do not count).
    func descriptors(under directory: String) -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { descriptor in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")
            return target?.hasPrefix(directory) == true
        }.count
    }

    @Test func aClosedSQLiteStoreServedAndFollowedClosesEveryFileItOpened() async throws {
        let directory = try TemporaryDirectory(prefix: "notesfs-store-life")
        defer { directory.remove() }
        for index in 0..<3 {
            let serving = ServingProcess(store: try SQLiteServerStore(path: directory.file("server-\(index).sqlite")))
            let token = try await AccountManager(store: serving.store).add(name: "gale").token.text
            _ = try await serving.push([Make.note(title: "n.md", body: "n\n")], token: token)
            #expect(descriptors(under: directory.path) > 0, "an open store holds its files")
            await serving.close()
        }
        // A writer thread that has just ended may hold its store a moment longer.
        let released = try await waitUntil { descriptors(under: directory.path) == 0 }
        #expect(released, "still open: \(descriptors(under: directory.path)) descriptors")
    }
}
