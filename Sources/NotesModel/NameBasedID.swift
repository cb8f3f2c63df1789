import Foundation

/// Name-based UUIDs (RFC 9562 version 8, SHA-256 of a namespace and a name), so
/// two machines that make the same thing offline give it the same id.
public enum NameBasedID {
    /// A UUID derived from `namespace` and `name`; equal inputs give equal ids.
    public static func make(namespace: UUID, name: String) -> UUID {
        var input = withUnsafeBytes(of: namespace.uuid) { Array($0) }
        input.append(contentsOf: Array(name.utf8))
        var bytes = Array(SHA256.hash(input).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC variant
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
