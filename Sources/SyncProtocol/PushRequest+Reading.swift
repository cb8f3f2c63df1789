import Foundation
import NotesModel

extension PushRequest {
    /// Decodes a push body without `JSONDecoder`, which cost the server more
    /// CPU than anything else per push. Nil for any body that is not a plain,
    /// well-formed request; the caller then decodes it with
    /// `WireCoding.decoder()`, which either accepts it too or names the field
    /// that is wrong. Every value this returns is one `JSONDecoder` gives
    /// for the same bytes (a test compares the two on generated bodies).
    public static func read(_ body: Data) -> PushRequest? {
        body.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return nil }
            var reader = StrictJSONReader(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: raw.count))
            guard let request = readRequest(&reader), reader.atEnd() else { return nil }
            return request
        }
    }

    private static func readRequest(_ reader: inout StrictJSONReader) -> PushRequest? {
        var device: DeviceID?
        var deviceName: String?
        var changes: [Change]?
        var cursor: SyncCursor?
        let read = reader.readObject { reader, key in
            switch key {
            case "device":
                guard let uuid = reader.readUUID() else { return false }
                device = DeviceID(uuid)
            case "deviceName":
                if reader.consumeNull() { return true }
                guard let text = reader.readString() else { return false }
                deviceName = text
            case "changes":
                var list: [Change] = []
                guard reader.readArray({ reader in
                    guard let change = readChange(&reader) else { return false }
                    list.append(change)
                    return true
                }) else { return false }
                changes = list
            case "cursor":
                if reader.consumeNull() { return true }
                guard let text = reader.readString() else { return false }
                cursor = SyncCursor(rawValue: text)
            default:
                return false
            }
            return true
        }
        guard read, let device, let changes else { return nil }
        return PushRequest(device: device, deviceName: deviceName, changes: changes, cursor: cursor)
    }

    private static func readChange(_ reader: inout StrictJSONReader) -> Change? {
        var changeId: ChangeID?
        var kind: EntityKind?
        var id: UUID?
        var op: ChangeOperation?
        var baseVersion: Int64?
        var note: NotePayload?
        var folder: FolderPayload?
        let read = reader.readObject { reader, key in
            switch key {
            case "changeId":
                guard let uuid = reader.readUUID() else { return false }
                changeId = ChangeID(uuid)
            case "kind":
                guard let text = reader.readString(), let value = EntityKind(rawValue: text) else { return false }
                kind = value
            case "id":
                guard let uuid = reader.readUUID() else { return false }
                id = uuid
            case "op":
                guard let text = reader.readString(), let value = ChangeOperation(rawValue: text) else { return false }
                op = value
            case "baseVersion":
                if reader.consumeNull() { return true }
                guard let value = reader.readPositiveInt64() else { return false }
                baseVersion = value
            case "note":
                if reader.consumeNull() { return true }
                guard let value = readNote(&reader) else { return false }
                note = value
            case "folder":
                if reader.consumeNull() { return true }
                guard let value = readFolder(&reader) else { return false }
                folder = value
            default:
                return false
            }
            return true
        }
        guard read, let changeId, let kind, let id, let op else { return nil }
        let change = Change(
            changeId: changeId, kind: kind, id: id, op: op, baseVersion: baseVersion, note: note, folder: folder)
        return change.shapeProblem == nil ? change : nil
    }

    private static func readNote(_ reader: inout StrictJSONReader) -> NotePayload? {
        var title: String?
        var body: String?
        var folderId: FolderID?
        var bodyEncoding: BodyEncoding?
        let read = reader.readObject { reader, key in
            switch key {
            case "title":
                guard let text = reader.readString() else { return false }
                title = text
            case "body":
                guard let text = reader.readString() else { return false }
                body = text
            case "folderId":
                if reader.consumeNull() { return true }
                guard let uuid = reader.readUUID() else { return false }
                folderId = FolderID(uuid)
            case "bodyEncoding":
                if reader.consumeNull() { return true }
                guard let text = reader.readString(), let value = BodyEncoding(rawValue: text) else { return false }
                bodyEncoding = value
            default:
                return false
            }
            return true
        }
        guard read, let title, let body else { return nil }
        guard bodyEncoding != .base64 || Data(base64Encoded: body) != nil else { return nil }
        return NotePayload(title: title, body: body, folderId: folderId, bodyEncoding: bodyEncoding)
    }

    private static func readFolder(_ reader: inout StrictJSONReader) -> FolderPayload? {
        var name: String?
        var parentId: FolderID?
        let read = reader.readObject { reader, key in
            switch key {
            case "name":
                guard let text = reader.readString() else { return false }
                name = text
            case "parentId":
                if reader.consumeNull() { return true }
                guard let uuid = reader.readUUID() else { return false }
                parentId = FolderID(uuid)
            default:
                return false
            }
            return true
        }
        guard read, let name else { return nil }
        return FolderPayload(name: name, parentId: parentId)
    }
}
