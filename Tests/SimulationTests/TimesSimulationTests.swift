import NotesSimulation
import Testing

/// The simulation's touches catch a store whose ctime follows the mtime back.
@Suite struct TimesSimulationTests {
    @Test func aStoreThatKeepsNoCtimeOfItsOwnIsCaught() async throws {
        let caught = try #require(await SimulationTests.firstCatch(.ctimeFollowsMtime, within: 1...20))
        #expect(caught.violations.contains { $0.contains("ctime went back") })
    }
}
