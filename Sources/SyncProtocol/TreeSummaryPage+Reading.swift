import Foundation
import NotesModel

extension TreeSummaryPage {
    /// Reads a page without `JSONDecoder`, which took most of a client's
    /// time listing a past tree of 10,000 notes. Nil for any body that is
    /// not a plain, well-formed page; the caller then decodes it with
    /// `WireCoding.decoder()`, which accepts it too or names what is wrong.
    /// Every page this returns is the one `JSONDecoder` gives for the same
    /// bytes (a test compares the two on generated and damaged pages).
    public static func read(_ body: Data) -> TreeSummaryPage? {
        body.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return nil }
            var reader = StrictJSONReader(
                UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: raw.count))
            guard let page = readPage(&reader), reader.atEnd() else { return nil }
            return page
        }
    }

    private static func readPage(_ reader: inout StrictJSONReader) -> TreeSummaryPage? {
        var at: Date?
        var entries: [TreeSummaryEntry]?
        var hasMore: Bool?
        var nextAfter: String?
        var keptSince: Date?
        var account: String?
        let read = reader.readObject { reader, key in
            switch key {
            case "at":
                at = readTime(&reader)
                return at != nil
            case "entries":
                var list: [TreeSummaryEntry] = []
                guard reader.readArray({ reader in
                    guard let entry = readEntry(&reader) else { return false }
                    list.append(entry)
                    return true
                }) else { return false }
                entries = list
            case "hasMore":
                hasMore = reader.readBool()
                return hasMore != nil
            case "nextAfter":
                if reader.consumeNull() { return true }
                nextAfter = reader.readString()
                return nextAfter != nil
            case "keptSince":
                if reader.consumeNull() { return true }
                keptSince = readTime(&reader)
                return keptSince != nil
            case "account":
                if reader.consumeNull() { return true }
                account = reader.readString()
                return account != nil
            default:
                return false
            }
            return true
        }
        guard read, let at, let entries, let hasMore else { return nil }
        return TreeSummaryPage(
            at: at, entries: entries, hasMore: hasMore, nextAfter: nextAfter, keptSince: keptSince, account: account)
    }

    private static func readEntry(_ reader: inout StrictJSONReader) -> TreeSummaryEntry? {
        var kind: EntityKind?
        var id: UUID?
        var version: Int64?
        var changeId: UUID?
        var time: Date?
        var device: UUID?
        var name: String?
        var parentId: UUID?
        var size: Int64?
        let read = reader.readObject { reader, key in
            switch key {
            case "kind":
                kind = reader.readString().flatMap(EntityKind.init(rawValue:))
                return kind != nil
            case "id":
                id = reader.readUUID()
                return id != nil
            case "version":
                version = reader.readPositiveInt64()
                return version != nil
            case "changeId":
                changeId = reader.readUUID()
                return changeId != nil
            case "time":
                time = readTime(&reader)
                return time != nil
            case "device":
                if reader.consumeNull() { return true }
                device = reader.readUUID()
                return device != nil
            case "name":
                name = reader.readString()
                return name != nil
            case "parentId":
                if reader.consumeNull() { return true }
                parentId = reader.readUUID()
                return parentId != nil
            case "size":
                size = reader.readNonNegativeInt64()
                return size != nil
            default:
                return false
            }
        }
        guard read, let kind, let id, let version, let changeId, let time, let name, let size else { return nil }
        return TreeSummaryEntry(
            kind: kind, id: id, version: version, changeId: ChangeID(changeId), time: time,
            device: device.map(DeviceID.init), name: name, parentId: parentId, size: size)
    }

    private static func readTime(_ reader: inout StrictJSONReader) -> Date? {
        reader.readString().flatMap(WireTime.parse)
    }
}
