import Foundation

/// The lines of one byte buffer, each with its terminator: where each starts and a
/// hash of its bytes, so the diff compares lines by a number first. Borrows the
/// bytes; lives only inside a `withUnsafeBytes` call.
struct LineTable {
    let bytes: UnsafeRawBufferPointer
    /// Line `i` is the bytes `starts[i]..<starts[i + 1]`; `starts.count == count + 1`.
    private(set) var starts: [Int] = [0]
    private(set) var hashes: [UInt64] = []

    var count: Int { hashes.count }

    /// Splits on `\n` only, so any bytes work: CRLF lines keep their `\r`, and a last
    /// line without a newline differs from the same text with one.
    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        guard let start = bytes.baseAddress else { return }
        var position = 0
        while position < bytes.count {
            // memchr, because a 16 MiB note must split fast even in a debug build.
            let end: Int
            if let newline = memchr(start + position, 0x0A, bytes.count - position) {
                end = start.distance(to: UnsafeRawPointer(newline)) + 1
            } else {
                end = bytes.count
            }
            hashes.append(Self.hash(start + position, count: end - position))
            starts.append(end)
            position = end
        }
    }

    /// The bytes of the lines `lines`, which are contiguous in the buffer.
    /// True when the last of `lines` ends with a line feed (false for no lines).
    func endsWithNewline(_ lines: Range<Int>) -> Bool {
        let range = byteRange(of: lines)
        return !range.isEmpty && bytes[range.upperBound - 1] == 0x0A
    }

    func byteRange(of lines: Range<Int>) -> Range<Int> {
        starts[lines.lowerBound]..<starts[lines.upperBound]
    }

    /// Whether line `index` here has exactly the bytes of line `other` in `table`. The
    /// hash only rules lines out; equal hashes are confirmed byte for byte.
    func line(_ index: Int, equals other: Int, in table: LineTable) -> Bool {
        guard hashes[index] == table.hashes[other] else { return false }
        let length = starts[index + 1] - starts[index]
        guard length == table.starts[other + 1] - table.starts[other] else { return false }
        guard length > 0, let mine = bytes.baseAddress, let theirs = table.bytes.baseAddress else { return true }
        return memcmp(mine + starts[index], theirs + table.starts[other], length) == 0
    }

    /// Whether `lines` here are the same sequence as `others` in `table`.
    func lines(_ lines: Range<Int>, equal others: Range<Int>, in table: LineTable) -> Bool {
        guard lines.count == others.count else { return false }
        return zip(lines, others).allSatisfy { line($0, equals: $1, in: table) }
    }

    /// A fast, deterministic 64-bit hash of a line (eight bytes at a time, then a
    /// murmur-style finish). Not cryptographic: equality is always confirmed.
    private static func hash(_ start: UnsafeRawPointer, count: Int) -> UInt64 {
        var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: count)
        var offset = 0
        while offset + 8 <= count {
            let word = start.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            hash = (hash ^ word) &* 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 29
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < count {
            tail |= UInt64(start.load(fromByteOffset: offset, as: UInt8.self)) << shift
            shift += 8
            offset += 1
        }
        hash = (hash ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        hash = hash &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        return hash
    }
}
