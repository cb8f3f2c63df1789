import Foundation
import Testing

@testable import NotesModel

@Suite struct TimeOrderedUUIDTests {
    @Test func idsAreVersion7WithTheRFCVariantAndNeverRepeat() {
        var seen = Set<UUID>()
        for _ in 0..<1_000 {
            let id = TimeOrderedUUID.make()
            let bytes = id.uuid
            #expect(bytes.6 >> 4 == 7)
            #expect(bytes.8 >> 6 == 0b10)
            seen.insert(id)
        }
        #expect(seen.count == 1_000)
    }

    @Test func theTimeAndTheRandomBitsLandWhereRFC9562PutsThem() {
        // 2026-12-02T00:00:00.000500000Z: 1,796,169,600,000 ms and half a millisecond.
        let id = TimeOrderedUUID.make(unixNanoseconds: 1_796_169_600_000_500_000, random: 0xFFFF_FFFF_FFFF_FFFF)
        // 0x01a2_340d_0c00 ms; fraction 0x800 of 4,096; version 7; variant 10 then 62 ones.
        #expect(UUIDText.format(id) == "01a2340d-0c00-7800-bfff-ffffffffffff")
    }

    @Test func idsMadeLaterSortLaterAsBytesAndAsText() {
        var previous = TimeOrderedUUID.make(unixNanoseconds: 1_796_169_600_000_000_000, random: .max)
        for step in 1...200 {
            // 25 µs apart: about one fraction step (244 ns) times a hundred.
            let next = TimeOrderedUUID.make(
                unixNanoseconds: 1_796_169_600_000_000_000 + UInt64(step) * 25_000, random: 0)
            #expect(UUIDText.precedes(previous, next))
            #expect(UUIDText.format(previous) < UUIDText.format(next))
            previous = next
        }
    }
}
