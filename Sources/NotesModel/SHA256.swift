import CSHA256

/// SHA-256 (FIPS 180-4), because the toolchain on Linux has no CryptoKit.
/// Used for name-based ids, payload hashes and token hashes. The rounds run
/// on the CPU's SHA instructions when it has them (`CSHA256`), else in Swift;
/// both give the same digests (`SHA256Tests`).
public struct SHA256: Sendable {
    /// Whether this CPU runs the rounds with its SHA instructions.
    public static let usesInstructions = csha256_has_instructions() == 1

    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    private var pending: [UInt8] = []
    private var totalBytes: UInt64 = 0
    private let instructions: Bool

    /// A hasher; `portable` runs the Swift rounds even where the CPU has SHA
    /// instructions (for tests that compare the two).
    public init(portable: Bool = false) {
        instructions = !portable && Self.usesInstructions
    }

    /// The digest of `bytes` in one call.
    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of `bytes` as lowercase hex.
    public static func hexHash<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        hash(bytes).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Adds `bytes` to the message. Contiguous bytes (arrays, `Data`) are
    /// hashed in place, block by block; other sequences are copied first.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { absorb($0) }
        if done == nil { Array(bytes).withUnsafeBufferPointer { absorb($0) } }
    }

    private mutating func absorb(_ bytes: UnsafeBufferPointer<UInt8>) {
        totalBytes &+= UInt64(bytes.count)
        var offset = 0
        if !pending.isEmpty {
            let taken = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<taken])
            offset = taken
            guard pending.count == 64 else { return }
            let block = pending
            block.withUnsafeBufferPointer { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        let whole = (bytes.count - offset) / 64 * 64
        if whole > 0 {
            compress(UnsafeBufferPointer(rebasing: bytes[offset..<offset + whole]))
            offset += whole
        }
        if offset < bytes.count { pending.append(contentsOf: bytes[offset...]) }
    }

    public mutating func finalize() -> [UInt8] {
        let bitLength = totalBytes &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBufferPointer { compress($0) }
        pending.removeAll()
        return state.flatMap { word in
            [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8),
             UInt8(truncatingIfNeeded: word)]
        }
    }

    /// Whole 64-byte blocks, all under one access to the state and the
    /// constants. Through unsafe buffers, whose subscripts are not checked
    /// in release builds: the payload hash of every pushed body runs here.
    private mutating func compress(_ blocks: UnsafeBufferPointer<UInt8>) {
        assert(blocks.count % 64 == 0, "SHA-256 compresses whole blocks")
        guard let base = blocks.baseAddress else { return }
        if instructions {
            state.withUnsafeMutableBufferPointer { state in
                guard let words = state.baseAddress else { return }
                csha256_compress(words, base, blocks.count / 64)
            }
            return
        }
        state.withUnsafeMutableBufferPointer { state in
            Self.roundConstants.withUnsafeBufferPointer { constants in
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { words in
                    for start in stride(from: 0, to: blocks.count, by: 64) {
                        let block = UnsafeRawPointer(base + start)
                        for index in 0..<16 {
                            words[index] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: index &* 4, as: UInt32.self))
                        }
                        for index in 16..<64 {
                            let w15 = words[index &- 15]
                            let w2 = words[index &- 2]
                            let s0 = Self.rotateRight(w15, 7) ^ Self.rotateRight(w15, 18) ^ (w15 >> 3)
                            let s1 = Self.rotateRight(w2, 17) ^ Self.rotateRight(w2, 19) ^ (w2 >> 10)
                            words[index] = words[index &- 16] &+ s0 &+ words[index &- 7] &+ s1
                        }
                        var (a, b, c, d, e, f, g, h) = (
                            state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7]
                        )
                        for index in 0..<64 {
                            let s1 = Self.rotateRight(e, 6) ^ Self.rotateRight(e, 11) ^ Self.rotateRight(e, 25)
                            let choose = (e & f) ^ (~e & g)
                            let temp1 = h &+ s1 &+ choose &+ constants[index] &+ words[index]
                            let s0 = Self.rotateRight(a, 2) ^ Self.rotateRight(a, 13) ^ Self.rotateRight(a, 22)
                            let majority = (a & b) ^ (a & c) ^ (b & c)
                            let temp2 = s0 &+ majority
                            (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ temp2)
                        }
                        state[0] &+= a
                        state[1] &+= b
                        state[2] &+= c
                        state[3] &+= d
                        state[4] &+= e
                        state[5] &+= f
                        state[6] &+= g
                        state[7] &+= h
                    }
                }
            }
        }
    }

    @inline(__always)
    private static func rotateRight(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value >> count) | (value << (32 - count))
    }
}
