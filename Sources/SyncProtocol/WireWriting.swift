import Foundation
import NotesModel

/// Writes the server's hot answers (push results, change pages) straight to
/// bytes, the same bytes `WireCoding.encoder()` makes (keys sorted, slashes
/// not escaped; a test compares the two), without `JSONEncoder`'s boxes.
public struct WireWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public var data: Data { Data(bytes) }

    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    public mutating func raw(_ byte: UInt8) {
        bytes.append(byte)
    }

    public mutating func raw(_ data: Data) {
        bytes.append(contentsOf: data)
    }

    public mutating func number(_ value: Int64) {
        // A number's text is a small string: no allocation.
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    public mutating func uuid(_ value: UUID) {
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UUIDText.format(value).utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A JSON string, escaped as `JSONEncoder` escapes it: `"`, `\`, and the
    /// control bytes below 0x20 (`\b \t \n \f \r`, the others `\u00xx`).
    public mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                default:
                    let low = byte & 0x0F
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(UInt8(ascii: "0") + (byte >> 4))
                    bytes.append(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    // MARK: Wire types, keys in sorted order

    public mutating func changeResult(_ result: ChangeResult) {
        raw(#"{"changeId":"#)
        uuid(result.changeId.uuid)
        switch result.outcome {
        case .applied(let version):
            raw(#","status":"applied","version":"#)
            number(version)
        case .conflict(let current):
            raw(#","current":"#)
            if let current { entityVersion(current) } else { raw("null") }
            raw(#","status":"conflict""#)
        case .refused(let reason, let message):
            raw(#","message":"#)
            string(message)
            raw(#","reason":"#)
            string(reason.rawValue)
            raw(#","status":"refused""#)
        }
        raw(UInt8(ascii: "}"))
    }

    public mutating func entityVersion(_ entity: EntityVersion) {
        raw(#"{"changeId":"#)
        uuid(entity.changeId.uuid)
        raw(#","deleted":"#)
        bool(entity.deleted)
        if let folder = entity.folder { folderPayload(folder) }
        raw(#","id":"#)
        uuid(entity.id)
        raw(#","kind":"#)
        string(entity.kind.rawValue)
        if let note = entity.note { notePayload(note) }
        raw(#","version":"#)
        number(entity.version)
        raw(UInt8(ascii: "}"))
    }

    /// `,"folder":{…}` as the encoder writes it inside an entity.
    private mutating func folderPayload(_ folder: FolderPayload) {
        raw(#","folder":{"name":"#)
        string(folder.name)
        raw(#","parentId":"#)
        if let parent = folder.parentId { uuid(parent.uuid) } else { raw("null") }
        raw(UInt8(ascii: "}"))
    }

    /// `,"note":{…}` as the encoder writes it inside an entity.
    private mutating func notePayload(_ note: NotePayload) {
        raw(#","note":{"body":"#)
        string(note.body)
        if let encoding = note.bodyEncoding {
            raw(#","bodyEncoding":"#)
            string(encoding.rawValue)
        }
        raw(#","folderId":"#)
        if let folder = note.folderId { uuid(folder.uuid) } else { raw("null") }
        raw(#","title":"#)
        string(note.title)
        raw(UInt8(ascii: "}"))
    }

    public mutating func historicEntity(_ entity: HistoricEntity) {
        raw(#"{"changeId":"#)
        uuid(entity.changeId.uuid)
        raw(#","deleted":"#)
        bool(entity.deleted)
        if let device = entity.device {
            raw(#","device":"#)
            uuid(device.uuid)
        }
        if let folder = entity.folder { folderPayload(folder) }
        raw(#","id":"#)
        uuid(entity.id)
        raw(#","kind":"#)
        string(entity.kind.rawValue)
        if let note = entity.note { notePayload(note) }
        raw(#","time":"#)
        string(WireTime.format(entity.time))
        raw(#","version":"#)
        number(entity.version)
        raw(UInt8(ascii: "}"))
    }

    /// A page of the past tree: a page holds up to megabytes of note text,
    /// which `JSONEncoder` wrote at about 16 MB/s.
    public mutating func treePage(_ page: TreePage) {
        raw(UInt8(ascii: "{"))
        if let account = page.account {
            raw(#""account":"#)
            string(account)
            raw(UInt8(ascii: ","))
        }
        raw(#""at":"#)
        string(WireTime.format(page.at))
        raw(#","entries":["#)
        for (index, entity) in page.entries.enumerated() {
            if index > 0 { raw(UInt8(ascii: ",")) }
            historicEntity(entity)
        }
        raw(#"],"hasMore":"#)
        bool(page.hasMore)
        if let keptSince = page.keptSince {
            raw(#","keptSince":"#)
            string(WireTime.format(keptSince))
        }
        if let nextAfter = page.nextAfter {
            raw(#","nextAfter":"#)
            string(nextAfter)
        }
        raw(UInt8(ascii: "}"))
    }

    public mutating func changesPage(_ page: ChangesPage) {
        raw(UInt8(ascii: "{"))
        if let account = page.account {
            raw(#""account":"#)
            string(account)
            raw(UInt8(ascii: ","))
        }
        raw(#""changes":["#)
        for (index, entity) in page.changes.enumerated() {
            if index > 0 { raw(UInt8(ascii: ",")) }
            entityVersion(entity)
        }
        raw(#"],"epoch":"#)
        string(page.epoch)
        if let from = page.from {
            raw(#","from":"#)
            string(from.rawValue)
        }
        raw(#","hasMore":"#)
        bool(page.hasMore)
        if let historySeconds = page.historySeconds {
            raw(#","historySeconds":"#)
            number(historySeconds)
        }
        raw(#","nextCursor":"#)
        string(page.nextCursor.rawValue)
        raw(UInt8(ascii: "}"))
    }
}

extension ChangeResult {
    /// The JSON `WireCoding.encoder()` makes of this result, written directly.
    public var wireJSON: Data {
        var writer = WireWriter()
        writer.changeResult(self)
        return writer.data
    }
}

extension ChangesPage {
    /// The JSON `WireCoding.encoder()` makes of this page, written directly.
    public var wireJSON: Data {
        var writer = WireWriter(capacity: 256 + changes.reduce(0) { $0 + $1.wireByteCount + 200 })
        writer.changesPage(self)
        return writer.data
    }
}

extension TreePage {
    /// The JSON `WireCoding.encoder()` makes of this page, written directly.
    public var wireJSON: Data {
        var writer = WireWriter(
            capacity: 256 + entries.reduce(0) { $0 + ($1.note.map { $0.body.utf8.count + $0.title.utf8.count } ?? 0) + 300 })
        writer.treePage(self)
        return writer.data
    }
}
