import Foundation

/// The JSON coders both sides use. Keys are sorted so equal values encode to
/// equal bytes (the server replays stored answers byte for byte).
public enum WireCoding {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        JSONDecoder()
    }
}
