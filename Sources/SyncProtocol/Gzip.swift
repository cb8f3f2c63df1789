import CZlib
import Foundation

/// gzip (RFC 1952) through zlib, for request and response bodies.
public enum Gzip {
    /// Why a body could not be decompressed.
    public enum Failure: Error, Sendable, Equatable {
        case invalid
        case tooLarge(limit: Int)
    }

    /// `data` compressed as one gzip member, or nil if zlib fails.
    /// The gzip form of a body over `minimumBytes` when it is smaller by more
    /// than the `Content-Encoding: gzip` header it needs; nil: send it as it is.
    public static func compressedForWire(_ body: Data, minimumBytes: Int) -> Data? {
        guard body.count > minimumBytes, let compressed = compress(body),
            compressed.count + contentEncodingHeaderBytes < body.count
        else { return nil }
        return compressed
    }

    static let contentEncodingHeaderBytes = "Content-Encoding: gzip\r\n".utf8.count

    public static func compress(_ data: Data, level: Int32 = 4) -> Data? {
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(data.count))) + 32
        var output = Data(count: bound)
        let status: Int32 = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.count = Int(stream.total_out)
        return output
    }

    /// The bytes of a gzip member; throws when it is not valid or would
    /// exceed `limit` bytes (a small body may expand enormously).
    public static func decompress(_ data: Data, limit: Int = 64 << 20) throws(Failure) -> Data {
        var stream = z_stream()
        guard czlib_inflate_init_gzip(&stream) == Z_OK else { throw .invalid }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1_024)
        let result: Result<Data, Failure> = data.withUnsafeBytes { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let status: Int32 = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                output.append(contentsOf: chunk[0..<produced])
                if output.count > limit { return .failure(.tooLarge(limit: limit)) }
                if status == Z_STREAM_END { return .success(output) }
                guard status == Z_OK else { return .failure(.invalid) }
            }
        }
        return try result.get()
    }
}
