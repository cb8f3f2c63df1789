import Foundation
import NotesModel
@testable import NotesStore
import Testing

/// The tree of a past moment, built from plain values: how names are given,
/// and what this machine's own records say of a moment.
@Suite struct MomentTreeTests {
    static let second: Int64 = 1_000_000_000
    let work = FolderID(), old = FolderID()
    let plan = NoteID(), todo = NoteID(), gone = NoteID(), later = NoteID(), edited = NoteID(), unkept = NoteID()

    func paths(_ tree: MomentTree) -> [String: String] {
        var found: [String: String] = [:]
        for index in tree.nodes.indices where index != 0 {
            let node = tree.nodes[index]
            var what = node.isDirectory ? "dir" : "\(node.size)"
            if case .text(let data)? = node.body { what = String(decoding: data, as: UTF8.self) }
            if case .history(let seq)? = node.body { what = "history \(seq)" }
            found[tree.path(of: index)] = what
        }
        return found
    }

    @Test func namesFollowTheMountsRulesAndTakenNamesGetTheLowestFreeSuffix() {
        let folder = UUID(), missing = UUID()
        let items = [
            MomentItem(kind: .folder, id: folder, name: "Work", parentID: nil, size: 0, modifiedNanoseconds: 1, body: nil),
            MomentItem(kind: .note, id: UUID(), name: "Work", parentID: nil, size: 1, modifiedNanoseconds: 1, body: .text(Data("n".utf8))),
            MomentItem(kind: .note, id: UUID(), name: "a/b", parentID: folder, size: 1, modifiedNanoseconds: 1, body: .text(Data("s".utf8))),
            MomentItem(kind: .note, id: UUID(), name: "", parentID: missing, size: 1, modifiedNanoseconds: 1, body: .text(Data("u".utf8))),
            MomentItem(kind: .note, id: UUID(), name: ".notesfs", parentID: nil, size: 1, modifiedNanoseconds: 1, body: .text(Data("c".utf8))),
        ]
        let tree = MomentTree(items: items)
        #expect(paths(tree) == ["Work": "dir", "Work (2)": "n", "Work/a\u{2215}b": "s", "Untitled": "u", "notesfs": "c"])
        #expect(tree.noteCount == 4 && tree.folderCount == 1)
        #expect(tree.nodes[0].children.map { tree.nodes[$0].name } == ["Untitled", "Work", "Work (2)", "notesfs"])
        #expect(tree.nodes[0].subdirectories == 1)
        #expect(tree.node(atPath: "Work/a\u{2215}b").map { tree.nodes[$0].id } == items[2].id)
        #expect(tree.node(atPath: "Work/none") == nil)
    }

    @Test func aFolderInALoopOrUnderAFolderNotThereThenIsShownInTheRoot() {
        let a = UUID(), b = UUID(), c = UUID()
        let tree = MomentTree(items: [
            MomentItem(kind: .folder, id: a, name: "A", parentID: b, size: 0, modifiedNanoseconds: 1, body: nil),
            MomentItem(kind: .folder, id: b, name: "B", parentID: a, size: 0, modifiedNanoseconds: 1, body: nil),
            MomentItem(kind: .folder, id: c, name: "C", parentID: UUID(), size: 0, modifiedNanoseconds: 1, body: nil),
        ])
        #expect(Set(paths(tree).keys).contains("C"))
        #expect(paths(tree).count == 3)
    }

    /// Records of a machine: Work/plan.md and todo.md made at 10, gone.md
    /// made at 10 and deleted at 30, later.md made at 40, edited.md made at
    /// 10 and changed at 30 (the text of then kept by the local history at
    /// 30 and 50), unkept.md made at 10 and changed at 30 with no copy kept,
    /// the folder Old made at 10 and deleted at 25.
    func records() -> MomentRecords {
        let s = Self.second
        return MomentRecords(
            notes: [
                .init(id: plan, title: "plan.md", folderID: work, createdNanoseconds: 10 * s, updatedNanoseconds: 10 * s, deletedNanoseconds: nil, size: 5),
                .init(id: todo, title: "todo.md", folderID: nil, createdNanoseconds: 10 * s, updatedNanoseconds: 12 * s, deletedNanoseconds: nil, size: 4),
                .init(id: gone, title: "gone.md", folderID: old, createdNanoseconds: 10 * s, updatedNanoseconds: 30 * s, deletedNanoseconds: 30 * s, size: 6),
                .init(id: later, title: "later.md", folderID: nil, createdNanoseconds: 40 * s, updatedNanoseconds: 40 * s, deletedNanoseconds: nil, size: 1),
                .init(id: edited, title: "edited.md", folderID: nil, createdNanoseconds: 10 * s, updatedNanoseconds: 50 * s, deletedNanoseconds: nil, size: 2),
                .init(id: unkept, title: "unkept.md", folderID: nil, createdNanoseconds: 10 * s, updatedNanoseconds: 30 * s, deletedNanoseconds: nil, size: 3),
            ],
            folders: [
                .init(id: work, name: "Work", parentID: nil, createdNanoseconds: 10 * s, deletedNanoseconds: nil),
                .init(id: old, name: "Old", parentID: nil, createdNanoseconds: 10 * s, deletedNanoseconds: 25 * s),
            ],
            kept: [
                .init(seq: 7, noteID: edited, savedNanoseconds: 50 * s, size: 70),
                .init(seq: 3, noteID: edited, savedNanoseconds: 30 * s, size: 30),
                .init(seq: 1, noteID: edited, savedNanoseconds: 5 * s, size: 10),
            ])
    }

    @Test func offlineAMomentHoldsWhatThisMachineHadThenWithTheTextOfThenWhereItWasKept() {
        let (items, laterTexts) = OfflineMoment.items(at: 20 * Self.second, from: records())
        let tree = MomentTree(items: items)
        #expect(paths(tree) == [
            "Work": "dir", "Work/plan.md": "5", "todo.md": "4", "Old": "dir", "Old/gone.md": "6",
            "edited.md": "history 3", "unkept.md": "3",
        ])
        #expect(laterTexts == 2)
        let gone = tree.node(atPath: "Old/gone.md").map { tree.nodes[$0] }
        #expect(gone?.body == .note(self.gone))
        #expect(gone?.modifiedNanoseconds == 20 * Self.second)
    }

    @Test func offlineAMomentBeforeEverythingIsEmptyAndAfterEverythingIsTheLiveTree() {
        let (before, _) = OfflineMoment.items(at: 9 * Self.second, from: records())
        #expect(before.isEmpty)
        let (after, laterTexts) = OfflineMoment.items(at: 60 * Self.second, from: records())
        #expect(paths(MomentTree(items: after)) == [
            "Work": "dir", "Work/plan.md": "5", "todo.md": "4", "later.md": "1", "edited.md": "2", "unkept.md": "3",
        ])
        #expect(laterTexts == 0)
    }

    @Test func offlineAMomentAtTheVeryTimeOfAChangeShowsTheChange() {
        let (items, _) = OfflineMoment.items(at: 30 * Self.second, from: records())
        let shown = paths(MomentTree(items: items))
        #expect(shown["Old/gone.md"] == nil && shown["gone.md"] == nil)
        #expect(shown["unkept.md"] == "3")
        #expect(shown["edited.md"] == "history 7")
    }
}
