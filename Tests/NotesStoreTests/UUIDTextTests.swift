import Foundation
import Testing

@testable import NotesStore

@Suite struct UUIDTextTests {
    @Test func formattingMatchesFoundationsLowercaseText() {
        for _ in 0..<200 {
            let uuid = UUID()
            #expect(UUIDText.format(uuid) == uuid.uuidString.lowercased())
        }
    }

    @Test(arguments: [
        "123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
        "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
    ])
    func parsingAgreesWithFoundation(text: String) {
        #expect(UUIDText.parse(text) == UUID(uuidString: text))
    }

    @Test(arguments: ["", "123e4567", "123e4567-e89b-12d3-a456-42661417400g", "123e4567e89b-12d3-a456-4266141740000"])
    func textThatIsNotAUUIDIsRefused(text: String) {
        #expect(UUIDText.parse(text) == nil)
        #expect(UUID(uuidString: text) == nil)
    }
}
