import Foundation
import NotesModel
import TestSupport
import Testing

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func knownVectorsHashCorrectly(input: String, expected: String) {
        #expect(SHA256.hexHash(Array(input.utf8)) == expected)
        var portable = SHA256(portable: true)
        portable.update(Array(input.utf8))
        #expect(portable.finalize().map { String(format: "%02x", $0) }.joined() == expected)
    }

    /// The CPU's SHA instructions are used where /proc/cpuinfo lists them,
    /// and give the Swift rounds' digest for every length around the block
    /// boundaries and for long messages.
    @Test func theInstructionsAndTheSwiftRoundsAgree() throws {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let listed = cpuinfo.split(separator: "\n").contains { $0.hasPrefix("flags") && $0.split(separator: " ").contains("sha_ni") }
        #expect(SHA256.usesInstructions == listed)
        let seed = Seeds.one(5)
        var generator = SplitMix64(seed: seed)
        let message = (0..<5_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for length in Array(0...200) + [1_023, 1_024, 2_048, 4_097, 5_000] {
            var fast = SHA256()
            var portable = SHA256(portable: true)
            fast.update(message[0..<length])
            portable.update(message[0..<length])
            #expect(fast.finalize() == portable.finalize(), "length \(length), \(Seeds.describe(seed))")
        }
    }

    @Test func aMillionBytesHashCorrectly() {
        let input = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hexHash(input) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func piecesOfAnySizeHashLikeTheWhole() {
        let seed = Seeds.one(3)
        var generator = SplitMix64(seed: seed)
        let message = (0..<1_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let whole = SHA256.hash(message)
        for _ in 0..<50 {
            var hasher = SHA256()
            var offset = 0
            var contiguous = true
            while offset < message.count {
                let length = min(Int.random(in: 0...150, using: &generator), message.count - offset)
                let piece = message[offset..<offset + length]
                // Alternate contiguous pieces with a lazy sequence that has no contiguous storage.
                if contiguous { hasher.update(Data(piece)) } else { hasher.update(piece.lazy.map { $0 }) }
                contiguous.toggle()
                offset += length
            }
            #expect(hasher.finalize() == whole, "\(Seeds.describe(seed))")
        }
    }

    @Test func nameBasedIDsAreStableAndDistinct() {
        var random = SplitMix64(seed: Seeds.one(4))
        let namespace = random.uuid()
        #expect(NameBasedID.make(namespace: namespace, name: "Work") == NameBasedID.make(namespace: namespace, name: "Work"))
        #expect(NameBasedID.make(namespace: namespace, name: "Work") != NameBasedID.make(namespace: namespace, name: "work"))
        #expect(NameBasedID.make(namespace: namespace, name: "Work").uuidString.dropFirst(14).first == "8")
    }
}
