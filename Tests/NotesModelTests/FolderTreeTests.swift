import Foundation
import NotesModel
import Testing
import TestSupport

@Suite struct FolderTreeTests {
    /// root ─ A ─ B ─ C, and D in the root.
    static let a = FolderID(name: "a")
    static let b = FolderID(name: "b")
    static let c = FolderID(name: "c")
    static let d = FolderID(name: "d")
    static let unknown = FolderID(name: "unknown")
    static let parents: [FolderID: FolderID?] = [a: nil, b: a, c: b, d: nil]

    @Test(
        arguments: [
            (a, c, true),
            (a, b, true),
            (a, a, true),
            (b, c, true),
            (c, a, false),
            (c, d, false),
            (b, d, false),
            (d, c, false),
            (a, nil, false),
            (a, unknown, false),
        ] as [(FolderID, FolderID?, Bool)])
    func movesIntoThemselvesAreCycles(folder: FolderID, newParent: FolderID?, cycle: Bool) {
        #expect(FolderTree.wouldCreateCycle(moving: folder, to: newParent) { Self.parents[$0] } == cycle)
    }

    @Test func aMoveUnderAnExistingLoopCountsAsACycle() {
        let looped: [FolderID: FolderID?] = [Self.a: Self.b, Self.b: Self.a, Self.d: nil]
        #expect(FolderTree.wouldCreateCycle(moving: Self.d, to: Self.a) { looped[$0] })
    }

    @Test func aNoteIsShownInItsFolderOnlyWhileTheFolderIsLive() {
        let live: Set<FolderID> = [Self.a]
        #expect(FolderTree.displayedFolder(of: Self.a) { live.contains($0) } == Self.a)
        #expect(FolderTree.displayedFolder(of: Self.b) { live.contains($0) } == nil)
        #expect(FolderTree.displayedFolder(of: nil) { live.contains($0) } == nil)
    }

    @Test func foldersInALoopOfCrossedMovesAreShownInTheRoot() {
        // A local move of A under B met a pulled move of B under A; X is inside A.
        let x = FolderID(name: "x")
        let parents: [FolderID: FolderID?] = [Self.a: Self.b, Self.b: Self.a, x: Self.a]
        let shown = { (folder: FolderID) in
            FolderTree.displayedParent(of: folder, parentOf: { parents[$0] }, isLive: { _ in true })
        }
        #expect(shown(Self.a) == nil)
        #expect(shown(Self.b) == nil)
        #expect(shown(x) == Self.a)
    }

    @Test func aFolderWhoseParentIsDeletedIsShownInTheRoot() {
        let live: Set<FolderID> = [Self.a, Self.c]
        let shown = { (folder: FolderID) in
            FolderTree.displayedParent(of: folder, parentOf: { Self.parents[$0] }, isLive: { live.contains($0) })
        }
        #expect(shown(Self.c) == nil)  // B is gone
        #expect(shown(Self.a) == nil)  // in the root anyway
    }

    @Test func theShownTreeNeverHasACycle() {
        for seed in Seeds.list(count: 300) {
            var random = SplitMix64(seed: seed)
            let folders = (0..<10).map { FolderID(name: "f\($0)") }
            var parents: [FolderID: FolderID?] = [:]
            for folder in folders { parents[folder] = random.percent(20) ? nil : random.pick(folders) }
            let live = Set(folders.filter { _ in random.percent(85) })
            for start in live {
                var current: FolderID? = start
                var steps = 0
                while let folder = current, steps <= folders.count {
                    current = FolderTree.displayedParent(
                        of: folder, parentOf: { parents[$0] }, isLive: { live.contains($0) })
                    steps += 1
                }
                #expect(current == nil, "seed \(seed): walking up from \(start) never reached the root")
            }
        }
    }

    @Test func foldersMadeOfflineOnTwoMachinesGetTheSameID() {
        let work = FolderTree.derivedFolderID(parent: nil, name: "Work")
        #expect(work == FolderTree.derivedFolderID(parent: nil, name: "Work"))
        #expect(work != FolderTree.derivedFolderID(parent: nil, name: "work"))
        #expect(work != FolderTree.derivedFolderID(parent: Self.a, name: "Work"))
        #expect(
            FolderTree.derivedFolderID(parent: work, name: "Caf\u{E9}")
                != FolderTree.derivedFolderID(parent: work, name: "Cafe\u{301}"))
        // Pinned: every version on every machine must derive the same id.
        #expect(work.description == "3b9822d0-2ef7-81a7-b3ab-326396e50100")
    }
}

extension FolderID {
    /// A readable, fixed test id.
    init(name: String) {
        self.init(
            NameBasedID.make(namespace: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), name: name)
        )
    }
}
