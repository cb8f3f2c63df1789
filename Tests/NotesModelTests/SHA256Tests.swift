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
