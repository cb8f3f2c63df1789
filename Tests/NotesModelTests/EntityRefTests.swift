import Foundation
import NotesModel
import TestSupport
import Testing

@Suite struct EntityRefTests {
    @Test func aRefGivesBackOnlyTheIdOfItsOwnKind() {
        let note = NoteID(), folder = FolderID()
        #expect(EntityRef.note(note).noteID == note && EntityRef.note(note).folderID == nil)
        #expect(EntityRef.folder(folder).folderID == folder && EntityRef.folder(folder).noteID == nil)
    }

    @Test func theSameUUIDAsANoteAndAsAFolderAreTwoKeys() {
        let uuid = UUID()
        let refs: Set<EntityRef> = [.note(NoteID(uuid)), .folder(FolderID(uuid)), .note(NoteID(uuid))]
        #expect(refs.count == 2)
    }

    @Test func textAndJSONRoundTripInLowercase() throws {
        let ref = EntityRef.folder(FolderID(try #require(UUIDText.parse("123E4567-E89B-12D3-A456-426614174000"))))
        #expect(ref.description == "folder:123e4567-e89b-12d3-a456-426614174000")
        #expect(EntityRef(ref.description) == ref)
        let json = try JSONEncoder().encode(ref)
        #expect(String(decoding: json, as: UTF8.self).contains("123e4567-e89b-12d3-a456-426614174000"))
        #expect(try JSONDecoder().decode(EntityRef.self, from: json) == ref)
    }

    @Test(arguments: [
        #"{"kind":"note","id":"123e4567-e89b-12d3-a456-42661417400g"}"#,
        #"{"kind":"notebook","id":"123e4567-e89b-12d3-a456-426614174000"}"#,
        #"{"kind":"note","id":"123e4567-e89b-12d3-a456-426614174000","version":3}"#,
        #"{"kind":"note"}"#,
    ])
    func malformedJSONIsADecodingError(json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(EntityRef.self, from: Data(json.utf8)) }
    }

    @Test(arguments: ["", "note", "note:", "note:xyz", "page:123e4567-e89b-12d3-a456-426614174000"])
    func malformedTextIsNil(text: String) {
        #expect(EntityRef(text) == nil)
    }

    @Test func theOrderIsKindThenTheIdsText() throws {
        let low = try #require(UUIDText.parse("00000000-0000-0000-0000-000000000001"))
        let high = try #require(UUIDText.parse("f0000000-0000-0000-0000-000000000000"))
        let sorted = [EntityRef(kind: .note, id: low), EntityRef(kind: .folder, id: high), EntityRef(kind: .folder, id: low)]
            .sorted()
        #expect(sorted == [EntityRef(kind: .folder, id: low), EntityRef(kind: .folder, id: high), EntityRef(kind: .note, id: low)])
    }
}
