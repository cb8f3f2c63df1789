import Foundation
import NotesModel
import SyncProtocol
@testable import SyncServer
import Testing

/// The payload hash is stored with every remembered change id, so a retry
/// after an upgrade must hash to the same bytes as before. The expected
/// digests were computed apart from this code (each field's UTF-8 and a
/// NUL, then the body; Python's hashlib).
@Suite struct PayloadHashTests {
    static let noteID = NoteID(UUID(uuidString: "0190a3c4-1111-7abc-8def-0123456789ab")!)
    static let folderID = FolderID(UUID(uuidString: "0190a3c4-2222-7abc-8def-0123456789ab")!)

    static func hex(_ digest: [UInt8]) -> String {
        digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test func aNoteWithABodyHashesAsItAlwaysDid() {
        let body = Data(String(repeating: "milk\n", count: 400).utf8)
        let change = Change.putNote(
            Self.noteID, NotePayload(title: "todo.md", bodyBytes: body, folderId: Self.folderID), baseVersion: 7)
        #expect(
            Self.hex(PayloadHash.of(change, body: body))
                == "21ef0af6ddf3394319defe6413ef83df3a28bb6f39b9a162e7c44c302d55483e")
    }

    @Test func anEmptyNoteInTheRootHashesAsItAlwaysDid() {
        let change = Change.putNote(
            Self.noteID, NotePayload(title: "é \"x\"", bodyBytes: Data(), folderId: nil), baseVersion: nil)
        #expect(
            Self.hex(PayloadHash.of(change, body: Data()))
                == "184d7dd61ba3d42a780066b5978830d02115129167908e5da5c4efd2816b8d91")
    }

    @Test func aFolderHashesAsItAlwaysDid() {
        let change = Change.putFolder(Self.folderID, FolderPayload(name: "Work", parentId: nil), baseVersion: nil)
        #expect(
            Self.hex(PayloadHash.of(change, body: Data()))
                == "0acdd65667ed8456bccab81d40b136db81ef0a9ef69389acde2fc0ef70a7b1de")
    }

    @Test func aDeleteHashesAsItAlwaysDid() {
        let change = Change.delete(EntityRef(kind: .note, id: Self.noteID.uuid), baseVersion: 12)
        #expect(
            Self.hex(PayloadHash.of(change, body: Data()))
                == "ff9d6eda8fe34737cc0391ecfba6f725ceb831dda6c4e3208d14a6057571ce5a")
    }
}
