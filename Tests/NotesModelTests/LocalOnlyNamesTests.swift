import NotesModel
import Testing

@Suite struct LocalOnlyNamesTests {
    @Test(arguments: [
        (".git", true),
        (".DS_Store", true),
        (".notes.md.swp", true),
        (".notes.md.swx", true),
        ("notes.md.swp", true),
        ("notes.md~", true),
        ("~$report.docx", true),
        ("4913", true),
        ("#notes.md#", true),
        (".#notes.md", true),
        (".notes.md.Xy12Ab", true),
        ("download.part", true),
        ("notes.tmp", true),
        ("Thumbs.db", true),
        ("desktop.ini", true),
        ("todo.md", false),
        ("notes.tmp.md", false),
        ("a~b", false),
        ("49130", false),
        ("#", false),
        ("#hashtag", false),
        ("swp", false),
        ("x.TMP", false),
        ("partial", false),
        ("notesfs", false),
        ("Untitled", false),
        ("", false),
        ("~\u{301}", true),
        ("x~\u{301}", false),
    ])
    func localOnlyNamesFollowTheTable(name: String, localOnly: Bool) {
        #expect(LocalOnlyNames.isLocalOnly(name) == localOnly)
    }

    @Test(arguments: [
        (["Work", ".git", "objects", "ab"], true),
        (["Work", "todo.md"], false),
        (["Work", "todo.md~"], true),
        ([], false),
    ])
    func everythingInsideAHiddenDirectoryIsLocalOnly(path: [String], localOnly: Bool) {
        #expect(LocalOnlyNames.isLocalOnly(pathComponents: path) == localOnly)
    }
}
