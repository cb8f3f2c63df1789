@testable import SyncEngine
import TestSupport
import Testing

@Suite struct EngineExecutorTests {
    @Test func theEngineRunsOnItsOwnQueueNotOnTheCooperativePool() async throws {
        let world = try await SyncWorld()
        defer { world.remove() }
        let device = try world.device("a")
        #expect(await device.engine.runsOnItsOwnQueue())
        // A task on the cooperative pool is not on the engine's queue.
        #expect(await Task.detached { EngineExecutor(label: "other").isCurrent }.value == false)
    }
}
