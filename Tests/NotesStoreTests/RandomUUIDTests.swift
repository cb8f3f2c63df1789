import Foundation
import Testing

import NotesModel
@testable import NotesStore

@Suite struct RandomUUIDTests {
    @Test func idsAreVersion4WithTheRFCVariantAndNeverRepeat() {
        var seen = Set<UUID>()
        for _ in 0..<1_000 {
            let id = RandomUUID.make()
            let bytes = id.uuid
            #expect(bytes.6 >> 4 == 4)
            #expect(bytes.8 >> 6 == 0b10)
            seen.insert(id)
        }
        #expect(seen.count == 1_000)
    }

    @Test func theRandomBitsLandInOrder() {
        let id = RandomUUID.make(high: 0x0011_2233_4455_6677, low: 0x8899_aabb_ccdd_eeff)
        #expect(UUIDText.format(id) == "00112233-4455-4677-8899-aabbccddeeff")
    }
}
