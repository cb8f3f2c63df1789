import Foundation
import NotesModel
import TestSupport
import Testing

@Suite struct UUIDTextTests {
    @Test func formattingMatchesFoundationsLowercaseText() {
        let seed = Seeds.one(1)
        var random = SplitMix64(seed: seed)
        for _ in 0..<200 {
            let uuid = random.uuid()
            #expect(UUIDText.format(uuid) == uuid.uuidString.lowercased(), "\(Seeds.describe(seed))")
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

    @Test func byteOrderIsTheOrderOfTheLowercaseText() {
        let seed = Seeds.one(2)
        var generator = SplitMix64(seed: seed)
        // Ids that share long prefixes, so every byte position decides some pairs.
        let ids = (0..<300).map { _ in
            UUID(uuid: (
                0, UInt8.random(in: 0...2, using: &generator), 0, 0, 0, 0, 0, 0,
                UInt8.random(in: 0...255, using: &generator), 0, 0, 0, 0, 0, 0,
                UInt8.random(in: 0...255, using: &generator)))
        } + (0..<100).map { _ in generator.uuid() }
        for (a, b) in zip(ids, ids.shuffled(using: &generator)) {
            #expect(UUIDText.precedes(a, b) == (UUIDText.format(a) < UUIDText.format(b)), "\(Seeds.describe(seed))")
            #expect(
                (NoteID(a) < NoteID(b)) == (NoteID(a).description < NoteID(b).description), "\(Seeds.describe(seed))")
        }
        #expect(!UUIDText.precedes(ids[0], ids[0]))
    }
}
